"""Stopping for futility: a candidate whose part in the decision is already fixed
needs no more items, whatever the remaining items would show.

decide (decide/decision.py, decide/hybrid.py) gives a candidate three ways to matter: as the
winner or a survivor (it must not be eliminated: no gate fails on its reported interval), or
through a hybrid plan that serves every task (edge: no task gate fails and each task figure is
on the good side of its limit; cloud: the reference's own task figures the same). So a
candidate can change neither status, winner nor routes once both hold, now and at the cap
(`eval.max_items`) in every completion of the items still to come:

1. eliminated: a whole-candidate gate fails on the interval decide reports (Wilson), now and
   at the cap even if every remaining item is perfect;
2. some task is served by neither side: one of its task figures is on the bad side of the limit
   for the candidate and one for the reference, now and at the cap even if every remaining
   item (of either) is perfect. (Its plan is then no solution, and the nearest attempt decide
   names is not part of status, winner or routes.)

The check is deterministic: it bounds the figures at the cap by their best case, so it never
makes a verdict that fixed N would not reach and it never creates a pass. The anytime-valid
error guarantee of the other stops is untouched. Only per-item rates are bounded here (a
rate's best case is plain: the remaining items all good); quality and extra badcases are
bootstrapped and never used to call a candidate futile. With k samples per item the reported
interval is at Kish's effective n, whose best case is not simply "all good": no futility then.
"""

from __future__ import annotations

import numpy as np

from edgepick.evaluate.intervals import verdict, wilson
from edgepick.evaluate.seq_gates import EvalGate, values

BOUNDED = ("unacceptable_rate", "format_compliance", "strict_format", "tool_choice_accuracy",
           "schema_valid_rate")  # per-item 0/1 flags, Wilson intervals


def _bad(direction: str, value: float, limit: float) -> bool:
    return value > limit if direction == "max" else value < limit


def _padded(g: EvalGate, x: np.ndarray, remaining: int) -> tuple[float, int]:
    """(count, n) at the cap in the best case: every remaining item carries the figure, good."""
    good = 0.0 if g.direction == "max" else 1.0
    return float(x.sum()) + good * remaining, int(x.size) + remaining


def surely_fails(g: EvalGate, outcomes: list, remaining: int) -> bool:
    """The gate fails on its Wilson interval now and in the best case at the cap."""
    x = values(g.metric, outcomes, None)
    if g.metric not in BOUNDED or x is None or x.size == 0:
        return False
    for c, n in ((float(x.sum()), int(x.size)), _padded(g, x, remaining)):
        lo, hi = wilson(int(round(c)), n)
        if verdict(c / n, lo, hi, g.limit, g.direction) != "fail":
            return False
    return True


def surely_bad_side(g: EvalGate, now: list, known: list, cap: int) -> bool:
    """The figure is on the bad side of the limit now (over `now`) and in the best case at the
    cap (`known`: every outcome known among the cap's items, the rest counted as good)."""
    if g.metric not in BOUNDED:
        return False
    x, kx = values(g.metric, now, None), values(g.metric, known, None)
    if x is None or x.size == 0 or kx is None:
        return False
    c, n = _padded(g, kx, max(0, cap - kx.size))
    return _bad(g.direction, float(x.mean()), g.limit) and _bad(g.direction, c / n, g.limit)


def futile(cand: list, ref: list, ref_known: list, cand_gates: list[EvalGate],
           task_gates: list[EvalGate], caps: dict[str, int], k: int) -> str | None:
    """Why the candidate can no longer change the decision, or None. `cand`/`ref`: the paired
    outcomes so far; `ref_known`: every reference outcome among the cap's items (other
    candidates' items included)."""
    if k > 1 or not task_gates:
        return None
    remaining = sum(caps.values()) - len(cand)
    out = next((g for g in cand_gates if surely_fails(g, cand, remaining)), None)
    if out is None:
        return None
    for task, cap in caps.items():
        tc = [o for o in cand if o.task == task]
        if not tc:
            continue
        tr = [o for o in ref if o.task == task]
        tk = [o for o in ref_known if o.task == task]
        edge = next((g for g in task_gates if surely_bad_side(g, tc, tc, cap)), None)
        cloud = next((g for g in task_gates if g.metric != "extra_badcases_per_1000"
                      and surely_bad_side(g, tr, tk, cap)), None)
        if edge is not None and cloud is not None:
            return (f"futile: fails {out.metric} and {task} is served by neither side "
                    f"({edge.metric} on the edge, {cloud.metric} on the cloud, even if every "
                    "remaining item is perfect)")
    return None
