"""The stopping rule's confidence sequence (evaluate/anytime.py): its guarantee over all looks,
simulated, and its agreement with the intervals the decision reports."""

from __future__ import annotations

import numpy as np

from edgepick.evaluate import anytime
from edgepick.evaluate.intervals import Z95, wilson

LIMIT = 0.05  # seed 004 §2.3: the unacceptable-rate limit of every preset


def _wilson_arrays(count, n):
    p = count / n
    d = 1 + Z95 ** 2 / n
    centre = (p + Z95 ** 2 / (2 * n)) / d
    half = Z95 * np.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / d
    return centre - half, centre + half


def simulate(p: float, runs: int, n_max: int, look: int, seed: int):
    """The whole sequential rule on synthetic items with true unacceptable rate p: a gate is
    settled at a look when the confidence sequence and the reported Wilson interval agree;
    unsettled at the cap, the Wilson verdict of fixed N stands. Returns (verdicts, items used)."""
    x = (np.random.default_rng(seed).random((runs, n_max)) < p).astype(float)
    above, below = anytime.excluded(x, LIMIT)
    looks = np.arange(look - 1, n_max, look)
    lo, hi = _wilson_arrays(np.cumsum(x, axis=1)[:, looks], (looks + 1)[None, :])
    ok = below[:, looks] & (hi <= LIMIT)
    bad = above[:, looks] & (lo > LIMIT)
    settled = ok | bad
    first = np.where(settled.any(axis=1), settled.argmax(axis=1), len(looks) - 1)
    rows = np.arange(runs)
    final = np.where(hi[:, -1] <= LIMIT, "pass", np.where(lo[:, -1] > LIMIT, "fail", "undetermined"))
    verdicts = np.where(ok[rows, first], "pass", np.where(bad[rows, first], "fail", final))
    return verdicts, looks[first] + 1


def test_wrong_verdicts_over_all_looks_stay_within_5_percent():
    """True rates at, just inside and just outside the limit; a wrong verdict is a fail for a
    rate at or under the limit, a pass for one over it. 4000 runs each, up to 400 items, a look
    every 10 items; the wrong-verdict rate's own Wilson interval must lie under 5%."""
    report = {}
    for p in (0.03, 0.04, 0.05, 0.06, 0.08, 0.20):
        verdicts, used = simulate(p, runs=4000, n_max=400, look=10, seed=int(p * 1000))
        wrong = (verdicts == "fail") if p <= LIMIT else (verdicts == "pass")
        lo, hi = wilson(int(wrong.sum()), wrong.size)
        report[p] = (wrong.mean(), hi, used.mean())
        assert hi <= 0.05, (p, wrong.mean(), hi)
    # far from the limit the rule stops early; at the limit it needs (nearly) every item
    assert report[0.20][2] < 60
    assert report[0.05][2] > 300
    print("\n  true rate  wrong  (95% high)  mean items of 400")
    for p, (w, hi, n) in report.items():
        print(f"  {p:9.0%}  {w:5.2%}  ({hi:6.2%})   {n:6.1f}")


def test_sequence_covers_the_mean():
    rng = np.random.default_rng(7)
    misses = 0
    for _ in range(60):
        x = (rng.random(120) < 0.3).astype(float)
        lo, hi = anytime.confidence_sequence(x)
        misses += not (lo <= 0.3 <= hi)
    assert misses <= 3


def test_side_reads_the_limit_like_the_interval():
    assert anytime.side(np.ones(10), LIMIT, "max") == "fail"
    assert anytime.side(np.zeros(10), LIMIT, "max") == "undetermined"  # 10 clean items prove little
    assert anytime.side(np.zeros(400), LIMIT, "max") == "pass"
    assert anytime.side(np.ones(100), 0.9, "min") == "pass"
    lo, hi = anytime.confidence_sequence([])
    assert (lo, hi) == (0.0, 1.0)


def test_paired_difference_maps_to_the_unit_interval():
    d = anytime.paired([1, 0, 1, 0], [0, 0, 1, 1])
    assert list(d) == [1.0, 0.5, 0.5, 0.0]


def test_median_side_for_repeated_measurements():
    fast = np.full(12, 300.0)  # 12 TTFTs of 300 ms against an 800 ms limit
    assert anytime.median_side(fast, 800.0, "max") == "pass"
    assert anytime.median_side(fast, 200.0, "max") == "fail"
    assert anytime.median_side(fast[:5], 800.0, "max") == "undetermined"  # 5 prove little
    assert anytime.median_side(np.full(12, 20.0), 15.0, "min") == "pass"  # tok/s over a floor
