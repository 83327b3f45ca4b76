"""The median's order-statistic interval (bench/median_ci.py): exact spending, the fixed-sample
special cases, and coverage over every look by simulation (no timing involved)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edgepick.bench.median_ci import ALPHA, median_interval, thresholds


def test_a_fixed_count_is_the_classic_interval():
    # n = 5: [min, max] (all five on one side has chance 1/32 ≤ 5%); n = 10: ranks 2 and 9
    assert median_interval([3, 1, 2, 5, 4], 5, 5) == (1.0, 5.0)
    assert median_interval(range(10), 10, 10) == (1.0, 8.0)
    # too few values for any one-sided 95% bound: no interval, never [min, max]
    assert median_interval([1, 2, 3, 4], 4, 4) is None
    assert median_interval([1, 2, 3], 5, 20) is None  # before the first look


def test_the_first_look_of_a_sequential_schedule_can_stop_at_five():
    assert thresholds(5, 20)[0] == 5
    assert median_interval([9, 8, 7, 6, 5], 5, 20) == (5.0, 9.0)


@pytest.mark.parametrize("n_min,n_max", [(5, 12), (5, 5), (3, 11), (6, 9)])
def test_the_chance_of_ever_crossing_is_at_most_alpha_exactly(n_min, n_max):
    """Every path of signs up to n_max, enumerated: the share whose count above the median
    reaches k_t at some look is the one-sided error, and it stays within ALPHA."""
    ks = thresholds(n_min, n_max)
    crossed = 0
    for signs in itertools.product((0, 1), repeat=n_max):
        above = np.cumsum(signs)
        crossed += any(k is not None and above[t - 1] >= k
                       for t, k in zip(range(n_min, n_max + 1), ks))
    assert crossed / 2 ** n_max <= ALPHA + 1e-12


@pytest.mark.parametrize("draw,median", [
    (lambda rng, size: rng.normal(10.0, 2.0, size), 10.0),
    (lambda rng, size: rng.lognormal(0.0, 1.0, size), 1.0),  # skewed, like latencies
    (lambda rng, size: rng.integers(1, 4, size).astype(float), 2.0),  # ties on the median
])
def test_coverage_holds_at_every_look_at_once(draw, median):
    """Simulated loops that look after each repetition from 5 to 20: the true median is below
    the low end at SOME look in at most 5% of them, and above the high end likewise."""
    rng = np.random.default_rng(27)
    sims, n_min, n_max = 3000, 5, 20
    data = draw(rng, (sims, n_max))
    low_miss = high_miss = 0
    for row in data:
        cis = [median_interval(row[:t], n_min, n_max) for t in range(n_min, n_max + 1)]
        low_miss += any(ci is not None and ci[0] > median for ci in cis)
        high_miss += any(ci is not None and ci[1] < median for ci in cis)
    slack = 3 * np.sqrt(ALPHA * (1 - ALPHA) / sims)  # Monte Carlo error of the rate
    assert low_miss / sims <= ALPHA + slack
    assert high_miss / sims <= ALPHA + slack


def test_more_repetitions_narrow_the_interval():
    """Unlike [min, max], which only widens with more values."""
    rng = np.random.default_rng(3)
    xs = rng.normal(10.0, 1.0, 40)
    lo5, hi5 = median_interval(xs[:5], 5, 5)
    lo40, hi40 = median_interval(xs, 40, 40)
    assert hi40 - lo40 < hi5 - lo5
    assert xs.max() - xs.min() > hi5 - lo5
