"""Eval-set validation: every bad line reported with file, line and field; good lines kept."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from edgepick.cli.cmd_eval import demo_eval_path
from edgepick.evaluate.items import load_eval_set

GOOD_QA = {"id": "q1", "task": "qa", "prompt": "Capital of France?", "reference": "Paris"}
GOOD_MATH = {"id": "m1", "task": "math", "prompt": "2+2?", "reference": 4, "difficulty": "easy"}


def write_lines(path: Path, lines: list) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)
                              for x in lines) + "\n", encoding="utf-8")
    return path


def test_malformed_file_reports_every_bad_line(tmp_path):
    f = write_lines(tmp_path / "set.jsonl", [
        GOOD_QA,                                                            # 1
        '{"id": "broken", "task": "qa", ',                                  # 2 broken JSON
        {"id": "u1", "task": "poem", "prompt": "x", "reference": "y"},      # 3 unknown task
        {"id": "r1", "task": "qa", "prompt": "x"},                          # 4 missing reference
        "",                                                                 # blank: ignored
        {"id": "t1", "task": "math", "prompt": "x", "reference": "many"},   # 6 wrong type
        {"id": "c1", "task": "classification", "prompt": "x", "reference": "b",
         "labels": ["a"]},                                                  # 7 not in labels
        {"id": "d1", "task": "qa", "prompt": "x", "reference": "y", "difficulty": "extreme",
         "critical": "maybe"},                                             # 8 two bad fields
        GOOD_MATH,                                                          # 9
        {"id": "q1", "task": "qa", "prompt": "again", "reference": "z"},    # 10 duplicate id
        {"id": "e1", "task": "extraction", "prompt": "x", "reference": {"a": 1},
         "schema": {"type": "object", "required": ["b"]}},                  # 11 ref fails schema
        {"id": "n1", "task": "qa", "prompt": "x", "messages": [{"role": "user", "content": "x"}],
         "reference": "y"},                                                 # 12 both inputs
    ])
    items, problems = load_eval_set(f)
    assert [it.id for it in items] == ["q1", "m1"]
    by_line = Counter(p.line for p in problems)
    assert set(by_line) == {2, 3, 4, 6, 7, 8, 10, 11, 12}
    assert by_line[8] == 2  # every bad field of a line, not only the first
    text = {p.line: str(p) for p in problems}
    assert all(str(f) in s for s in text.values())
    assert "broken JSON" in text[2]
    assert "field 'task'" in text[3] and "unknown task 'poem'" in text[3]
    assert "field 'reference'" in text[4] and "missing" in text[4]
    assert "field 'reference'" in text[6]
    assert "duplicate id 'q1'" in text[10]
    fields = {(p.line, p.field) for p in problems}
    assert {(8, "difficulty"), (8, "critical"), (11, "reference"), (12, "messages")} <= fields


def test_missing_file_is_a_one_line_error(tmp_path, cli):
    r = cli("eval", "-m", "tiny", "-r", "tiny", "--data", str(tmp_path / "nope.jsonl"))
    assert r.returncode == 2
    assert "nope.jsonl" in r.stderr and "Traceback" not in r.stderr


def test_bundled_demo_set_is_valid_and_covers_the_brief():
    items, problems = load_eval_set(demo_eval_path())
    assert problems == []
    assert len(items) >= 200
    tasks = Counter(it.task for it in items)
    assert len(tasks) >= 5 and min(tasks.values()) >= 20
    assert {it.difficulty for it in items} == {"easy", "medium", "hard"}
    assert sum(it.critical for it in items) >= 10
    langs = Counter(it.tags[0] for it in items)
    assert langs["en"] >= 80 and langs["zh"] >= 80
    # interleaved, so a short --limit slice still covers every task type
    assert len({it.task for it in items[:13]}) == len(tasks)
    for it in items:
        if it.task == "classification":
            assert it.reference in it.labels
            assert all(lab in it.chat_messages()[0]["content"] for lab in it.labels)


def test_demo_set_references_pass_their_own_scorers():
    """A model that answered exactly the reference would score 1 on every item."""
    from edgepick.evaluate.scorers import get_scorer

    items, _ = load_eval_set(demo_eval_path())
    for it in items:
        ref = it.reference
        out = ref[0] if isinstance(ref, list) else json.dumps(ref, ensure_ascii=False) \
            if isinstance(ref, dict) else str(ref)
        s = get_scorer(it.task).score(it, out)
        assert s.correct and s.format_ok and s.score == 1.0, it.id
