"""bench/speculation's arithmetic on made-up requests: the settings' order is balanced, the
speed-up is a geometric mean of per-item ratios with its interval, acceptance is pooled over
items, a kind that never drafted is `idle` whatever the speeds say, and identical text is
counted per item."""

from __future__ import annotations

from collections import Counter

import pytest

from edgepick.bench.speculation import SpecRequest, _order, figures, timing_agreement


def test_every_setting_takes_every_place_equally_often():
    places = Counter((k, p) for j in range(6) for p, k in enumerate(_order(3, j)))
    assert set(places.values()) == {2} and len(places) == 9


def _req(item, setting, tps, drafted=0, accepted=0, steps=0, text="a"):
    return SpecRequest(item=item, task="qa", setting=setting, text=text, generated=33,
                       client_tps=tps * 1.01, engine_tps=tps, drafted=drafted,
                       accepted=accepted, steps=steps, draft_ms=10.0, predicted_ms=100.0)


def test_speed_up_acceptance_and_identity_per_task():
    reqs = []
    for i in range(6):
        reqs += [_req(f"q{i}", "none", 10.0),
                 _req(f"q{i}", "k", 20.0, drafted=10, accepted=8, steps=4,
                      text="a" if i else "b"),
                 _req(f"q{i}", "idle", 30.0)]
    rows = {r.setting: r for r in figures(reqs)}
    k = rows["k"]
    assert k.speedup == pytest.approx(2.0) and k.speedup_low == pytest.approx(2.0)
    assert k.verdict == "wins" and k.acceptance == pytest.approx(0.8)
    assert k.mean_accepted_len == pytest.approx(1 + 48 / 24)
    assert k.draft_share == pytest.approx(0.1) and k.identical == 5 and k.items == 6
    assert rows["idle"].verdict == "idle" and rows["idle"].acceptance is None
    assert timing_agreement(reqs) == pytest.approx(0.01)


def test_speed_up_is_over_the_items_the_kind_drafted_on():
    """Items it drafted nothing for ran plain decoding's steps: their speeds (here 9x apart, as
    a busy host made them) say nothing; one or two drafting items leave it undetermined."""
    reqs = []
    for i in range(5):
        drafted = 10 if i < 3 else 0
        reqs += [_req(f"q{i}", "none", 10.0),
                 _req(f"q{i}", "k", 12.0 if drafted else 90.0, drafted=drafted, accepted=5,
                      steps=2),
                 _req(f"q{i}", "rare", 50.0, drafted=10 if i == 0 else 0, accepted=5, steps=2)]
    rows = {r.setting: r for r in figures(reqs)}
    assert rows["k"].speedup == pytest.approx(1.2) and rows["k"].drafting_items == 3
    assert rows["k"].verdict == "wins"
    assert rows["rare"].speedup == pytest.approx(5.0) and rows["rare"].verdict == "undetermined"


def test_three_scattered_ratios_do_not_make_a_win():
    """Ratios of 5.2, 1.25 and 1.38 (a busy host's spread): a percentile bootstrap would put
    the interval at [1.25, 5.2], a win; Student's t over the log ratios keeps 1 inside."""
    reqs = []
    for i, r in enumerate((5.2, 1.25, 1.38)):
        reqs += [_req(f"q{i}", "none", 10.0), _req(f"q{i}", "k", 10.0 * r, drafted=10, steps=2)]
    (k,) = figures(reqs)
    assert k.speedup == pytest.approx((5.2 * 1.25 * 1.38) ** (1 / 3))
    assert k.speedup_low < 1 < k.speedup_high and k.verdict == "undetermined"
