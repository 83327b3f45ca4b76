"""The gap: paired bootstrap sanity, per-task aggregation and badcases per 1000."""

from __future__ import annotations

import numpy as np
import pytest

from edgepick.evaluate.items import EvalItem
from edgepick.evaluate.gap import paired_bootstrap
from edgepick.evaluate.eval_result import _candidate_eval, score_outputs
from edgepick.records.candidate import Candidate
from edgepick.records.model_ref import ModelRef


def test_identical_scores_give_zero_gap_and_zero_interval():
    scores = [1, 0, 1, 1, 0, 0.5, 0.25]
    ci, ci_rel = paired_bootstrap(scores, scores)
    assert ci == [0.0, 0.0] and ci_rel == [0.0, 0.0]


def test_constant_difference_gives_that_difference():
    ci, _ = paired_bootstrap([1.0] * 10, [0.0] * 10)
    assert ci == [1.0, 1.0]


def test_interval_brackets_the_estimate_and_is_reproducible():
    rng = np.random.default_rng(1)
    ref = rng.uniform(0, 1, 200)
    cand = np.clip(ref - rng.normal(0.05, 0.1, 200), 0, 1)
    ci1, _ = paired_bootstrap(list(ref), list(cand))
    ci2, _ = paired_bootstrap(list(ref), list(cand))
    assert ci1 == ci2  # fixed seed
    gap = ref.mean() - cand.mean()
    assert ci1[0] < gap < ci1[1]
    assert ci1[0] > 0  # a real 0.05 drop on 200 items is not within noise
    # pairing: the same shift on items of very different difficulty keeps the interval narrow
    wide, _ = paired_bootstrap(list(ref), list(ref - 0.05))
    assert wide[1] - wide[0] < 1e-9


def _items():
    return [EvalItem(id=f"q{i}", task="qa", prompt="p", reference="Paris", difficulty="easy")
            for i in range(4)] + [
        EvalItem(id="m1", task="math", prompt="p", reference=4, difficulty="hard", critical=True),
        EvalItem(id="m2", task="math", prompt="p", reference=9, difficulty="hard")]


def _outs(texts, finish=None):
    return [{"text": t, "finish_reason": (finish or {}).get(i, "stop")} for i, t in enumerate(texts)]


def test_per_task_gap_badcases_and_unacceptable():
    items = _items()
    ref_o, ref_s = score_outputs(items, _outs(["Paris"] * 4 + ["4", "9"]))
    cand_o, cand_s = score_outputs(items, _outs(["Paris", "Paris", "London", "", "5", "9 9 9 9 9 9 9 9 9 9 9 9"],
                                                {5: "length"}))
    c = Candidate(ref=ModelRef.file("x.gguf"))
    ev = _candidate_eval(c, items, cand_o, cand_s, ref_o, ref_s, 6, 0, 500, 1)
    qa, math = ev.per_task["qa"], ev.per_task["math"]
    assert qa.n == 4 and qa.ref_score == 1.0 and qa.score == 0.5
    assert qa.gap_abs == pytest.approx(0.5) and qa.gap_rel == pytest.approx(0.5)
    assert qa.ci95[0] <= 0.5 <= qa.ci95[1]
    assert qa.badcases_per_1000 == pytest.approx(500)  # 2 of 4 wrong vs 0 of 4
    assert qa.format_ok_rate == 0.75  # the empty answer
    # math: m1 wrong and critical; m2 right number but a loop that ran out of budget
    assert math.score == 0.5 and math.badcases_per_1000 == pytest.approx(1000)
    # m2's loop ran to the budget after a parseable answer: a loop, not "truncated"
    assert ev.unacceptable.reasons == {"critical_wrong": 1, "empty": 1, "repetition_loop": 1}
    assert ev.unacceptable.count == 3 and ev.unacceptable_rate == pytest.approx(0.5)
    assert {b.item_id for b in ev.badcases} == {"q2", "q3", "m1", "m2"}
    why = {b.item_id: b.why for b in ev.badcases}
    assert "critical_wrong" in why["m1"] and "repetition_loop" in why["m2"]
    assert all(b.reference_output for b in ev.badcases)
    assert set(ev.per_difficulty) == {"easy", "hard"}
    assert ev.overall.n == 6
