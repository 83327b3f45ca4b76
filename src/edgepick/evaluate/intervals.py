"""95% intervals and sample-size estimates for the figures a decision gates on (docs/decide.md,
seed 004 §2.3: a 5% limit judged on 30 items cannot tell 2% from 20%).

Proportions (unacceptable rate, badcase rate, format rates) get a Wilson score interval; mean
scores get a percentile bootstrap (paired differences: evaluate/gap.py). `items_to_settle_*` answer "how many
items in all would most likely settle this verdict", assuming the observed rate or mean and its
spread hold as more items come in.
"""

from __future__ import annotations

import math

import numpy as np

from edgepick.stats import Z95, wilson  # noqa: F401  (evaluate's callers take them from here)
from edgepick.stats import wilson_p as _wilson_p

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
MAX_ITEMS = 1_000_000  # beyond this an estimate says "not by adding items"


def per_item_rate(values: list[float], k: int) -> tuple[float, float, float]:
    """A rate over items each sampled k times (values: each item's share of bad samples), the
    item as the unit: the Wilson interval at the effective sample size n·p(1-p)/var(item shares)
    (Kish's design effect for cluster samples). Samples that always agree within an item give
    n_eff = n, the interval of one sample per item; independent ones up to n·k."""
    v = np.asarray(values, dtype=float)
    n = v.size
    if n == 0:
        return 0.0, 0.0, 1.0
    p = float(v.mean())
    var = float(v.var())
    n_eff = n if var <= 0 else min(n * max(1, k), n * p * (1 - p) / var)
    lo, hi = _wilson_p(p, n_eff)
    return p, lo, hi


def bootstrap_mean(values: list[float], resamples: int = BOOTSTRAP_RESAMPLES,
                   seed: int = BOOTSTRAP_SEED, bounds: tuple[float, float] = (0.0, 1.0)
                   ) -> tuple[float, float]:
    """Percentile interval of the mean; a mean of values in [0, 1] stays in [0, 1]."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return bounds
    idx = np.random.default_rng(seed).integers(0, v.size, size=(resamples, v.size))
    means = v[idx].mean(axis=1)
    lo, hi = float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))
    return max(bounds[0], lo), min(bounds[1], hi)


def verdict(value: float | None, low: float | None, high: float | None, limit: float | None,
            direction: str) -> str:
    """pass: the whole interval on the good side of the limit; fail: the whole interval on the
    bad side; undetermined: the limit inside the interval; unmeasured: no value.
    `direction` "max" means the value must stay at or below the limit, "min" at or above."""
    if limit is None:
        return "pass"
    if value is None:
        return "unmeasured"
    lo = value if low is None else low
    hi = value if high is None else high
    if direction == "max":
        return "pass" if hi <= limit else "fail" if lo > limit else "undetermined"
    return "pass" if lo >= limit else "fail" if hi < limit else "undetermined"


def items_to_settle_rate(count: int, n: int, limit: float) -> int | None:
    """Smallest total number of items whose Wilson interval, at the observed rate, no longer
    contains the limit; None when the rate sits on the limit (no sample size settles it)."""
    if n <= 0:
        return None
    p = count / n
    if abs(p - limit) < 1e-12:
        return None

    def settled(m: int) -> bool:
        lo, hi = _wilson_p(p, m)
        return hi <= limit if p < limit else lo > limit

    if settled(n):
        return n
    hi_m = n
    while not settled(hi_m):
        hi_m *= 2
        if hi_m > MAX_ITEMS:
            return None
    lo_m = hi_m // 2
    while lo_m + 1 < hi_m:  # the interval narrows monotonically with m at a fixed rate
        mid = (lo_m + hi_m) // 2
        lo_m, hi_m = (lo_m, mid) if settled(mid) else (mid, hi_m)
    return hi_m


def items_to_settle_mean(mean: float, sd: float, limit: float) -> int | None:
    """Total items for a normal-approximation 95% interval of the mean to clear the limit."""
    gap = abs(mean - limit)
    if gap < 1e-12:
        return None
    if sd <= 0:
        return 1
    m = math.ceil((Z95 * sd / gap) ** 2)
    return m if m <= MAX_ITEMS else None
