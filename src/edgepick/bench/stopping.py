"""When a configuration's repetitions stop (docs/bench.md, "When repetitions
stop"): between the minimum (seed 000 §3.4: five or more) and the plan's maximum, after each
repetition every limit the point is gated on is judged on the median's interval
(bench/median_ci.py) exactly as decide judges it (evaluate.intervals.verdict); once none is
undetermined the loop stops. A point without limits runs its fixed number of repeats.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from edgepick.bench.median_ci import median_interval
from edgepick.bench.metrics import PER_RUN, request_samples
from edgepick.evaluate.intervals import verdict
from edgepick.records.bench import JudgedLimit, MetricStats


class Limit(BaseModel):
    """One gate on this point's median. metric "answer_ms" is decide's end-to-end figure:
    median TTFT + out_tokens at the median decode speed, its interval from the two intervals
    (decide/gates.py `_e2e`)."""

    gate: str  # the scenario constraint, e.g. decode_tps_min
    metric: Literal["ttft_ms", "decode_tps", "prefill_tps", "e2e_ms", "answer_ms"]
    direction: Literal["max", "min"]
    limit: float
    out_tokens: int | None = None  # answer_ms only


class StopRule(BaseModel):
    min_repeats: int = Field(5, ge=1)
    max_repeats: int = Field(20, ge=1)
    limits: list[Limit] = Field(default_factory=list)

    @property
    def most(self) -> int:
        return max(self.min_repeats, self.max_repeats)


def run_values(runs: list[dict]) -> dict[str, list[float]]:
    """Per repetition, each PER_RUN figure of its first request (the loop runs at
    concurrency 1, so that is the run's only one)."""
    out: dict[str, list[float]] = {k: [] for k in PER_RUN}
    for run in runs:
        s = request_samples(run["requests"][0]) if run["requests"] else {}
        for k in PER_RUN:
            if s.get(k) is not None:
                out[k].append(s[k])
    return out


def _figure(lim: Limit, one):
    """(median, low, high) of the limit's figure; `one(metric)` gives a metric's triple."""
    if lim.metric != "answer_ms":
        return one(lim.metric)
    t, d = one("ttft_ms"), one("decode_tps")
    if None in (t[0], d[0]) or d[0] <= 0 or lim.out_tokens is None:
        return None, None, None
    value = t[0] + lim.out_tokens / d[0] * 1000
    if None in (t[1], t[2], d[1], d[2]) or not d[1]:
        return value, None, None
    return value, t[1] + lim.out_tokens / d[2] * 1000, t[2] + lim.out_tokens / d[1] * 1000


def _judge(rule: StopRule, one) -> list[JudgedLimit]:
    """A median without an interval (before the minimum, or too few values) is undetermined,
    never a pass on its point value."""
    out = []
    for lim in rule.limits:
        value, lo, hi = _figure(lim, one)
        v = "undetermined" if lo is None or hi is None else verdict(value, lo, hi, lim.limit,
                                                                      lim.direction)
        out.append(JudgedLimit(gate=lim.gate, metric=lim.metric, direction=lim.direction,
                               limit=lim.limit, value=value, low=lo, high=hi, verdict=v))
    return out


def judge(runs: list[dict], rule: StopRule) -> list[JudgedLimit]:
    """Every limit's verdict on the repetitions so far."""
    values = run_values(runs)

    def one(name: str):
        xs = values.get(name) or []
        if not xs:
            return None, None, None
        ci = median_interval(xs, rule.min_repeats, rule.most)
        return (float(np.median(xs)),) + (ci or (None, None))
    return _judge(rule, one)


def judge_stored(metrics: dict[str, MetricStats], rule: StopRule) -> list[JudgedLimit]:
    """The same verdicts from a stored row's figures (its intervals, under the schedule it ran)."""
    def one(name: str):
        m = metrics.get(name)
        return (None, None, None) if m is None else (m.median, m.median_low, m.median_high)
    return _judge(rule, one)


def settles(metrics: dict[str, MetricStats], rule: StopRule | None) -> bool:
    """Whether a stored row already settles every limit of this rule (no rule: it does)."""
    if rule is None:
        return True
    return all(j.verdict != "undetermined" for j in judge_stored(metrics, rule))


def stop_reason(runs: list[dict], rule: StopRule | None, repeats: int) -> str | None:
    """None: repeat again; "fixed": the plain count ran; "settled": every limit is settled;
    "max": the plan's maximum ran with some limit still undetermined."""
    n = len(runs)
    if rule is None or not rule.limits:
        return "fixed" if n >= repeats else None
    if n < rule.min_repeats:
        return None
    if all(j.verdict != "undetermined" for j in judge(runs, rule)):
        return "settled"
    return "max" if n >= rule.most else None
