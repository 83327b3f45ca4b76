"""Anytime-valid 95% confidence sequences for a bounded mean (a rate, a mean score, a paired
difference rescaled to [0, 1]): the stopping rule of sequential evaluation (docs/evaluate.md).

Method: the hedged betting confidence sequence of Waudby-Smith & Ramdas, "Estimating means of
bounded random variables by betting", JRSS-B 86(1), 2024 (arXiv:2010.09686), §4 with the
predictable plug-in bets of their eq. (26)-(27) and the truncation of Remark 3. For a candidate
mean m, two gamblers bet that the mean is above or below m:

    K+_t(m) = prod_i (1 + l+_i(m) (x_i - m)),   K-_t(m) = prod_i (1 - l-_i(m) (x_i - m)),
    l_i = sqrt(2 log(2/alpha) / (s2_{i-1} i log(1 + i))),  l+_i(m) = min(l_i, c/m),
    l-_i(m) = min(l_i, c/(1 - m)),  c = 1/2.

Under the true mean both are nonnegative martingales, so by Ville's inequality the chance that
either ever reaches 2/alpha is at most alpha: the set {m : max(K+, K-) / 2 < 1/alpha} covers the
mean at every look at once, however often one looks and whenever one stops. K+ falls and K-
rises with m, so the set is an interval, and a gate's limit is excluded from the low (high) side
exactly when K+ (K-) at the limit has reached 2/alpha at some look: the verdict needs the two
capitals at the limit only, which is what makes the simulation test cheap.
"""

from __future__ import annotations

import math

import numpy as np

ALPHA = 0.05
BET_CAP = 0.5  # c: the largest fraction of the capital staked (WSR 2024 use 1/2 or 3/4)
BISECT = 30  # 1e-9 on [0, 1]


def bets(x: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """Predictable plug-in bets l_i for observations x (last axis: time), each from x_1..x_{i-1}."""
    x = np.asarray(x, dtype=float)
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)  # mu_hat_i uses x_1..x_i
    s2 = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)
    prev = np.concatenate([np.full(x.shape[:-1] + (1,), 0.25), s2[..., :-1]], axis=-1)
    return np.sqrt(2 * math.log(2 / alpha) / (prev * t * np.log1p(t)))


def log_capitals(x: np.ndarray, m: float | np.ndarray, alpha: float = ALPHA,
                 lam: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """log K+_t(m), log K-_t(m) for every t (last axis), for m a scalar or an array broadcast
    against x's leading axes (e.g. a grid of shape (G, 1))."""
    x = np.asarray(x, dtype=float)
    lam = bets(x, alpha) if lam is None else lam
    m = np.asarray(m, dtype=float)
    with np.errstate(divide="ignore"):
        up = np.minimum(lam, BET_CAP / np.maximum(m, 1e-12))
        down = np.minimum(lam, BET_CAP / np.maximum(1 - m, 1e-12))
    d = x - m
    return np.cumsum(np.log1p(up * d), axis=-1), np.cumsum(np.log1p(-down * d), axis=-1)


def excluded(x: np.ndarray, limit: float, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """(mean above limit shown, mean below limit shown) by each look t, running (once shown,
    stays shown): the betting CS has left the limit on that side."""
    lp, lm = log_capitals(x, limit, alpha)
    thr = math.log(2 / alpha)
    return np.maximum.accumulate(lp >= thr, axis=-1), np.maximum.accumulate(lm >= thr, axis=-1)


def confidence_sequence(x, alpha: float = ALPHA) -> tuple[float, float]:
    """The running-intersection interval after all of x (values in [0, 1]); (0, 1) for none.
    K+ falls and K- rises with m at every t, so each end is found by bisection."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return 0.0, 1.0
    lam = bets(x, alpha)
    thr = math.log(2 / alpha)

    def out(m: float, which: int) -> bool:  # m lies outside the sequence at some look
        return bool((log_capitals(x, m, alpha, lam)[which] >= thr).any())

    lo = _boundary(lambda m: out(m, 0), below=True) if out(0.0, 0) else 0.0
    hi = _boundary(lambda m: out(m, 1), below=False) if out(1.0, 1) else 1.0
    return lo, max(lo, hi)


def _boundary(is_out, below: bool) -> float:
    """The first m inside (below: out below the boundary) or the last one (out above it)."""
    a, b = 0.0, 1.0
    for _ in range(BISECT):
        mid = (a + b) / 2
        if is_out(mid) == below:
            a = mid
        else:
            b = mid
    return b if below else a


def side(x, limit: float, direction: str, alpha: float = ALPHA) -> str:
    """pass / fail / undetermined for 'mean <= limit' (direction max) or '>= limit' (min), by
    the confidence sequence over all of x."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return "undetermined"
    above, below = excluded(x, limit, alpha)
    hi_ok, lo_ok = bool(below[-1]), bool(above[-1])  # below: mean < limit shown
    if direction == "max":
        return "pass" if hi_ok else "fail" if lo_ok else "undetermined"
    return "pass" if lo_ok else "fail" if hi_ok else "undetermined"


def paired(cand, ref) -> np.ndarray:
    """Per-item candidate - reference differences in [-1, 1], moved to [0, 1]."""
    return (np.asarray(cand, dtype=float) - np.asarray(ref, dtype=float) + 1.0) / 2.0


def median_side(values, limit: float, direction: str, alpha: float = ALPHA) -> str:
    """pass / fail / undetermined for 'median <= limit' (max) or '>= limit' (min) of repeated
    measurements, anytime-valid: the median is below the limit exactly when more than half of
    the values are, so the sequence runs on the flags value < limit against 1/2 (for bench's
    repetition loop: repeat until this settles, between the plan's minimum and maximum)."""
    below = (np.asarray(values, dtype=float) < limit).astype(float)
    v = side(below, 0.5, "min", alpha)  # pass: P(value < limit) > 1/2, the median is under
    if direction == "max":
        return v
    return {"pass": "fail", "fail": "pass"}.get(v, v)
