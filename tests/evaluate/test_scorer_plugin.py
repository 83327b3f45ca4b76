"""A scorer for a new task type, from a package outside src/: registered by an
entry point, its task is accepted by an eval set and scored; an unknown task is still refused,
and the refusal lists the plugin's task beside the built-in ones."""

from __future__ import annotations

import json

import pytest

from edgepick.evaluate import scorers

PLUGIN = '''
from typing import ClassVar

from edgepick.evaluate.scorers import ItemScore


class Sentiment:
    name = "sentiment"
    pass_rule: ClassVar[str] = "the output names the expected polarity"

    def score(self, item, output):
        ok = item.reference in output.lower()
        return ItemScore(score=float(ok), correct=ok, format_ok=bool(output.strip()),
                         why="" if ok else "wrong polarity")

    def aggregate(self, items, scores):
        return {}
'''


@pytest.fixture
def sentiment_plugin(tmp_path, monkeypatch):
    from plugin_dist import write_plugin

    pkg = write_plugin(tmp_path / "site", "sentiment-scorer", "sentiment_scorer", PLUGIN,
                       "edgepick.scorers", {"sentiment": "sentiment_scorer:Sentiment"})
    monkeypatch.syspath_prepend(str(pkg))
    # a registry of the test's own, that reads the entry points again: edgepick's and the plugin's
    monkeypatch.setattr(scorers, "SCORERS", scorers.SCORERS.fresh())


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_an_eval_set_uses_the_task_a_plugin_scorer_registers(sentiment_plugin, tmp_path):
    from edgepick.evaluate.items import load_eval_set

    items, problems = load_eval_set(_write(tmp_path / "s.jsonl", [
        {"id": "a", "task": "sentiment", "prompt": "Great film!", "reference": "positive"},
        {"id": "b", "task": "classification", "prompt": "x?", "reference": "y",
         "labels": ["y", "n"]}]))
    assert problems == [] and [i.task for i in items] == ["sentiment", "classification"]
    assert "sentiment" in scorers.scored_tasks()
    got = scorers.get_scorer("sentiment").score(items[0], "Positive, clearly.")
    assert got.correct and got.score == 1.0


def test_a_task_no_scorer_registers_is_refused_with_the_known_ones(sentiment_plugin, tmp_path):
    from edgepick.evaluate.items import load_eval_set

    _, problems = load_eval_set(_write(tmp_path / "s.jsonl", [
        {"id": "a", "task": "sentimnet", "prompt": "x", "reference": "positive"}]))
    assert len(problems) == 1 and problems[0].line == 1
    assert "unknown task 'sentimnet'" in str(problems[0]) and "sentiment" in str(problems[0])


def test_the_eval_stage_scores_a_plugin_task_end_to_end(sentiment_plugin, scripted, tmp_path):
    from edgepick.evaluate.stage import EvalRequest, run

    make, store = scripted
    data = _write(tmp_path / "s.jsonl", [
        {"id": f"s{i}", "task": "sentiment", "prompt": f"s{i}", "reference": "positive"}
        for i in range(6)])
    ref = make("ref", lambda prompt, seed: "Positive.")
    cand = make("cand", lambda prompt, seed: "negative" if prompt in ("s0", "s1") else "positive")
    res = run(EvalRequest(data=str(data), reference=ref, candidates=[cand]), store)
    got = next(c for c in res.candidates if c.name == "cand")
    assert got.per_task["sentiment"].n == 6
    assert got.per_task["sentiment"].score == pytest.approx(4 / 6)
    assert sorted(b.item_id for b in got.badcases) == ["s0", "s1"]
