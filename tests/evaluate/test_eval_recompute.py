"""What the eval stores is enough to check it: per-item pass/fail and unacceptable reasons are
recomputed from the stored outputs, and every interval from the stored counts."""

from __future__ import annotations

import json

import pytest

from edgepick.evaluate.items import EvalItem
from edgepick.evaluate.intervals import wilson
from edgepick.evaluate.eval_result import _candidate_eval, score_outputs
from edgepick.evaluate.outputs import DEFAULT_MAX_TOKENS
from edgepick.evaluate.scorers import get_scorer
from edgepick.evaluate.unacceptable import reasons
from edgepick.records.candidate import Candidate
from edgepick.records.evaluation import CandidateEval


def _items():
    out = []
    for i in range(12):
        out.append(EvalItem(id=f"m{i}", task="math", prompt="p", reference=i, critical=i == 3))
        out.append(EvalItem(id=f"c{i}", task="classification", prompt="p", reference="positive",
                            labels=["positive", "negative"], tags=["en"]))
    return out


CAND = ["{i}", "The answer is {i}.", "{j} (because)", "no idea", "{i} {i} {i} {i} {i} {i} {i} "
        "{i} {i} {i} {i} {i} {i}"]
LABEL = ["positive", "It is positive.", "negative", "", "正面情感", "not positive"]


def _outputs(shift: int):
    outs = []
    for i in range(12):
        outs.append({"text": CAND[(i + shift) % len(CAND)].format(i=i, j=i + 1),
                     "finish_reason": "length" if i % 4 == 0 else "stop"})
        outs.append({"text": LABEL[(i + shift) % len(LABEL)], "finish_reason": "stop"})
    return outs


def test_item_verdicts_and_intervals_recompute_from_what_is_stored():
    items = _items()
    budgets = dict(DEFAULT_MAX_TOKENS)
    ref_o, ref_s = score_outputs(items, _outputs(0), budgets)
    cand_o, cand_s = score_outputs(items, _outputs(2), budgets)
    ev = _candidate_eval(Candidate(model="tiny"), items, cand_o, cand_s, ref_o, ref_s, 24, 0,
                         300, 7)
    stored = CandidateEval.model_validate(json.loads(ev.model_dump_json()))
    by_id = {it.id: it for it in items}
    for o in stored.items:  # an independent re-scoring of the stored output alone
        it = by_id[o.item_id]
        s = get_scorer(it.task).score(it, o.output)
        why = reasons(it, o.output, o.finish_reason, s)
        assert (s.correct, why) == (o.correct, o.unacceptable)
        assert o.badcase == ((not s.correct) or bool(why))
        assert o.max_tokens == budgets[it.task]
    for task, g in stored.per_task.items():
        rows = [o for o in stored.items if o.task == task]
        for rate, flags in ((g.badcases, [o.badcase for o in rows]),
                            (g.unacceptable, [bool(o.unacceptable) for o in rows])):
            assert (rate.count, rate.n) == (sum(flags), len(flags))
            assert (rate.low, rate.high) == pytest.approx(wilson(rate.count, rate.n))
        assert 0.0 <= g.score_ci95[0] <= g.score <= g.score_ci95[1] <= 1.0
        assert g.badcases_per_1000 == pytest.approx(
            (g.badcases.value - g.ref_badcases.value) * 1000)
        lo, hi = g.badcases_per_1000_ci95
        assert lo <= g.badcases_per_1000 <= hi
    u = stored.unacceptable
    assert (u.low, u.high) == pytest.approx(wilson(u.count, u.n))
    assert stored.overall.strict_format.n == 24  # both tasks have a strict form
