"""A distribution-free interval for the median of repeated measurements that stays valid however
the repetitions stop between a minimum and a maximum (docs/bench.md, "When repetitions stop").

Method: the sign test's repeated confidence interval, an order-statistic interval. At look t
(t values, sorted x_(1) ≤ … ≤ x_(t)) the interval is [x_(t−k_t+1), x_(k_t)]: the true median m
lies below its low end only when at least k_t of the t values exceeded m, and each value exceeds
m with chance 1/2 whatever the distribution (sign test: Conover, "Practical Nonparametric
Statistics", 3rd ed. 1999, §3.4, the median's interval from order statistics). Over the looks
t = n_min … n_max the count above m is a simple random walk, and the thresholds k_t are chosen by
the exact dynamic programme of group-sequential designs (Jennison & Turnbull, "Group Sequential
Methods with Applications to Clinical Trials", 2000, ch. 12, exact binomial computations) with
an alpha-spending function (Lan & DeMets, Biometrika 70(3):659-663, 1983) so that the chance
the walk EVER reaches k_t, at any look, is at most ALPHA on each side. Hence each end is a
one-sided 95% bound simultaneously over all looks (the repeated confidence interval of
Jennison & Turnbull, JRSS-B 51(3):305-361, 1989): a loop that stops when the interval clears
a limit, at whichever look, gives a wrong verdict on that limit with chance ≤ 5%.

Spending: the seed's minimum (seed 000 §3.4: five repetitions or more) is where a point far
from its limits settles, so the first look may spend FIRST_SHARE of alpha (enough for "all five
on one side", 1/32 ≤ 0.035); the rest is spent linearly up to the maximum. With n_min = n_max
(a fixed number of repeats) this is the ordinary fixed-sample interval of the median; at n = 5
it is [min, max].
"""

from __future__ import annotations

from functools import lru_cache

ALPHA = 0.05  # per end: each end is a one-sided 95% bound (the pair a 90% interval)
FIRST_SHARE = 0.7  # share of ALPHA the first look may spend
_EPS = 1e-12


def _spent_by(t: int, n_min: int, n_max: int, alpha: float) -> float:
    if n_max <= n_min:
        return alpha
    return alpha * (FIRST_SHARE + (1 - FIRST_SHARE) * (t - n_min) / (n_max - n_min))


@lru_cache(maxsize=256)
def thresholds(n_min: int, n_max: int, alpha: float = ALPHA) -> tuple[int | None, ...]:
    """k_t for t = n_min … max(n_min, n_max) (None: no interval at that look), by the exact
    distribution of the count above the median among the walks that have not crossed yet."""
    n_min = max(1, n_min)
    n_max = max(n_min, n_max)
    mass = [1.0]  # mass[s]: chance of s values above m after t values, not yet crossed
    for _ in range(n_min):
        mass = _step(mass)
    spent, out = 0.0, []
    for t in range(n_min, n_max + 1):
        if t > n_min:
            mass = _step(mass)
        budget = _spent_by(t, n_min, n_max, alpha) - spent
        k, tail = None, 0.0
        for s in range(t, (t - 1) // 2, -1):  # k above t/2 keeps the low end below the high
            if tail + mass[s] > budget + _EPS:
                break
            tail += mass[s]
            k = s
        if k is not None:
            spent += tail
            mass = mass[:k] + [0.0] * (t + 1 - k)
        out.append(k)
    return tuple(out)


def _step(mass: list[float]) -> list[float]:
    """One more value: above m or not, each with chance 1/2."""
    out = [0.0] * (len(mass) + 1)
    for s, p in enumerate(mass):
        out[s] += p / 2
        out[s + 1] += p / 2
    return out


def median_interval(values, n_min: int, n_max: int,
                    alpha: float = ALPHA) -> tuple[float, float] | None:
    """[low, high] for the median after these values (in any order), for a loop that looks
    after each repetition from n_min to n_max; None when this look has no interval (fewer
    values than n_min, more than n_max, or too few for any)."""
    xs = sorted(float(v) for v in values if v is not None)
    t = len(xs)
    n_max = max(n_min, n_max)
    if t < n_min or t > n_max:
        return None
    k = thresholds(n_min, n_max, alpha)[t - n_min]
    if k is None:
        return None
    return xs[t - k], xs[k - 1]
