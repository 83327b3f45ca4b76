"""The quality gates as sequential evaluation judges them after each look: per item values, the
anytime-valid verdict (evaluate/anytime.py) and the verdict of the interval the decision will
report (Wilson, per-item rate or bootstrap, as evaluate/gap.py computes it). A gate counts as
settled only when both agree, so a stopped candidate's stored figures give decide the verdict
the stopping rule saw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict

from edgepick.evaluate import anytime
from edgepick.evaluate.gap import item_values, paired_bootstrap
from edgepick.evaluate.intervals import bootstrap_mean, per_item_rate, verdict, wilson
from edgepick.gate_spec import gate_of, gate_table
from edgepick.records.evaluation import ItemOutcome


def eval_metrics() -> frozenset[str]:
    """The metrics sequential looks judge: every gate with a per-item producer
    (edgepick/gate_spec.py), a plugin's included."""
    return frozenset(g.metric for g in gate_table().values() if g.in_looks)


class EvalGate(BaseModel):
    """One quality limit the stopping rule judges; plan/stages.py makes them from the gate
    table and the scenario."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    direction: str  # max | min
    limit: float
    scopes: tuple[str, ...] = ("candidate",)  # candidate and/or task
    routable: bool = True  # a hybrid can route around a failure (a task-scope gate)
    never_settles: bool = False  # a figure the looks do not model (weighted quality): keep open


@dataclass
class Judged:
    verdict: str  # pass | fail | undetermined (confidence sequence and reported interval agree)
    cs: str  # the confidence sequence's own verdict
    n: int
    distance: float  # how far from settling: 1 - max(log capital) / threshold (0 = settled)


def values(metric: str, cand: list[ItemOutcome], ref: list[ItemOutcome] | None
           ) -> np.ndarray | None:
    """Per-item values of `metric` in [0, 1], from its gate's `item_values` producer, or None
    when no gate reads it per item or no item carries it."""
    spec = gate_of(metric)
    fn = None if spec is None else spec.producer("item_values")
    if fn is None:
        return None
    got = fn(cand, ref)
    return None if got is None or len(got) == 0 else np.asarray(got, dtype=float)


def _limit01(metric: str, limit: float) -> float:
    return (limit / 1000 + 1) / 2 if metric == "extra_badcases_per_1000" else limit


def reported(metric: str, x: np.ndarray, k: int, cand, ref) -> tuple[float, float, float]:
    """The figure and interval decide will read, as evaluate/gap.py computes them."""
    if metric == "quality":
        lo, hi = bootstrap_mean(list(x))
        return float(x.mean()), lo, hi
    if metric == "extra_badcases_per_1000":
        cb, rb = item_values(cand, "badcase"), item_values(ref, "badcase")
        (lo, hi), _ = paired_bootstrap(cb, rb)  # mean(cb) − mean(rb), as gap.py
        v = (float(np.mean(cb)) - float(np.mean(rb))) * 1000
        return v, lo * 1000, hi * 1000
    if k > 1:
        return per_item_rate(list(x), k)
    c = int(round(float(x.sum())))
    lo, hi = wilson(c, x.size)
    return float(x.mean()), lo, hi


def judge(g: EvalGate, cand: list[ItemOutcome], ref: list[ItemOutcome] | None,
          k: int = 1) -> Judged:
    x = values(g.metric, cand, ref)
    if x is None or x.size == 0:
        return Judged("undetermined", "undetermined", 0, 1.0)
    if g.never_settles:
        return Judged("undetermined", "undetermined", int(x.size), 1.0)
    lim = _limit01(g.metric, g.limit)
    cs = anytime.side(x, lim, g.direction)
    v, lo, hi = reported(g.metric, x, k, cand, ref)
    rep = verdict(v, lo, hi, g.limit, g.direction)
    lp, lm = anytime.log_capitals(x, lim)
    thr = np.log(2 / anytime.ALPHA)
    best = max(float(np.max(lp)), float(np.max(lm)))
    return Judged(cs if cs == rep else "undetermined", cs, int(x.size),
                  0.0 if cs == rep != "undetermined" else max(0.0, 1 - best / thr))


def interval(g: EvalGate, cand, ref) -> tuple[float | None, float | None]:
    """The confidence sequence of the gate's figure, in the gate's own unit."""
    x = values(g.metric, cand, ref)
    if x is None or x.size == 0:
        return None, None
    lo, hi = anytime.confidence_sequence(x)
    if g.metric == "extra_badcases_per_1000":
        return (2 * lo - 1) * 1000, (2 * hi - 1) * 1000
    return lo, hi
