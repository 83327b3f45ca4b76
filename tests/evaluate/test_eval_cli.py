"""`edgepick eval` end to end on real models: JSON shape, stored outputs reused, bad lines."""

from __future__ import annotations

import json
import sqlite3

from edgepick.cli.cmd_eval import demo_eval_path
from edgepick.evaluate.items import load_eval_set
from edgepick.evaluate.eval_sets import spread

GROUP_KEYS = {"n", "score", "ref_score", "gap_abs", "gap_rel", "ci95", "badcases_per_1000",
              "format_ok_rate", "unacceptable_rate"}


def _rows(store: str, kind: str) -> int:
    with sqlite3.connect(store) as c:
        return c.execute("SELECT COUNT(*) FROM results WHERE kind=?", (kind,)).fetchone()[0]


def test_eval_two_candidates_resumes_and_reuses(cli, store_path, tmp_path):
    # smollm2 is both the reference and a candidate: identical outputs, so its gap must be 0.
    base = ["eval", "-m", "tiny", "-m", "smollm2", "-r", "smollm2", "--data", demo_eval_path(),
            "--store", store_path, "--threads", "1", "--ctx", "512", "--json"]
    first = cli(*base, "--limit", "3")
    assert first.returncode == 0, first.stderr
    assert _rows(store_path, "eval_output") == 6  # 3 items × 2 distinct models

    second = cli(*base, "--limit", "7", "--out", str(tmp_path / "out"))
    assert second.returncode == 0, second.stderr
    res = json.loads(second.stdout)
    assert _rows(store_path, "eval_output") == 14  # only the 4 new items were generated
    assert res["n_items"] == 7 and res["reference"]["generated"] == 4
    tiny, same = res["candidates"]
    assert (tiny["generated"], tiny["reused"]) == (4, 3)
    assert (same["generated"], same["reused"]) == (0, 7)  # same content key as the reference

    # --limit takes items round-robin over the tasks, as a plan's eval.limit does
    items, _ = load_eval_set(demo_eval_path())
    assert set(tiny["per_task"]) == {it.task for it in spread(items, 7)}
    assert len(tiny["per_task"]) > 3
    for cand in (tiny, same):
        for g in [*cand["per_task"].values(), *cand["per_difficulty"].values()]:
            assert GROUP_KEYS <= set(g)
            assert len(g["ci95"]) == 2 and g["ci95"][0] <= g["gap_abs"] + 1e-12 <= g["ci95"][1] + 2e-12
        assert 0 <= cand["unacceptable_rate"] <= 1
        from edgepick.records.evaluation import UNACCEPTABLE_REASONS

        assert set(cand["unacceptable"]["reasons"]) <= set(UNACCEPTABLE_REASONS)
        for b in cand["badcases"]:
            assert {"item_id", "task", "expected", "got", "why"} <= set(b) and b["why"]
        assert "items" not in cand  # per-item outcomes go to --out only
    for g in same["per_task"].values():
        assert g["gap_abs"] == 0 and g["ci95"] == [0.0, 0.0] and g["badcases_per_1000"] == 0
    full = json.loads((tmp_path / "out" / "eval.json").read_text())
    assert len(full["candidates"][0]["items"]) == 7
    assert (tmp_path / "out" / "gap.csv").read_text().startswith("candidate,group_kind")

    third = cli(*base, "--limit", "7")
    again = json.loads(third.stdout)
    assert _rows(store_path, "eval_output") == 14
    assert [c["generated"] for c in [again["reference"], *again["candidates"]]] == [0, 0, 0]
    assert again["candidates"][0]["per_task"] == tiny["per_task"]  # re-scored, same figures
    assert _rows(store_path, "eval") == 2  # limit 3 and limit 7 are different evals


def test_eval_reports_bad_lines_and_runs_good_ones(cli, store_path, tmp_path):
    good = [json.loads(line) for line in open(demo_eval_path(), encoding="utf-8")][:2]
    lines = [json.dumps(good[0], ensure_ascii=False), '{"id": "b", "task": ',
             json.dumps({"id": "u", "task": "haiku", "prompt": "x", "reference": "y"}),
             json.dumps({"id": "r", "task": "qa", "prompt": "x"}),
             json.dumps(good[1], ensure_ascii=False)]
    f = tmp_path / "mixed.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = cli("eval", "-m", "tiny", "-r", "tiny", "--data", str(f), "--store", store_path,
            "--threads", "1", "--ctx", "512", "--json")
    assert r.returncode == 0, r.stderr
    for n, word in ((2, "broken JSON"), (3, "unknown task 'haiku'"), (4, "'reference': missing")):
        assert f"{f}:{n}:" in r.stderr and word in r.stderr
    res = json.loads(r.stdout)
    assert res["n_items"] == 2 and res["n_invalid_lines"] == 3 and len(res["problems"]) == 3
