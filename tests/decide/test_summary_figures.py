"""A summary's figures live in one map: the flat names are read-only views of it, and summaries
stored before (flat fields, no figure) still load."""

from __future__ import annotations

import json

import pytest

from edgepick.records.decision import FIGURE_VIEWS, CandidateSummary, Figure


def test_flat_names_read_the_figures():
    s = CandidateSummary(candidate="c", model="/m/c.gguf")
    s.figures["decode_tps"] = Figure(value=31.5, low=30.0, high=33.0, n=5, method="order")
    s.figures["quality"] = Figure(value=0.8)
    assert s.decode_tps == 31.5 and s.quality_overall == 0.8 and s.ttft_p50_ms is None
    with pytest.raises(AttributeError):
        s.decode_tps = 1.0  # type: ignore[misc]


def test_a_summary_stored_with_flat_fields_loads_into_figures():
    old = {"candidate": "c", "model": "/m/c.gguf", "ttft_p50_ms": 90.0, "decode_tps": 62,
           "quality_overall": 0.7, "format_compliance": 0.93, "unacceptable_rate": 0.01,
           "energy_per_token_j": 0.05, "memory_growth_mib_per_1k": 0.4, "sustained_power_w": 3.5,
           "figures": {"decode_tps": {"value": 62.0, "low": 55.8, "high": 68.2, "n": 5,
                                      "method": "order"}}}
    s = CandidateSummary.model_validate(old)
    assert s.figures["decode_tps"].low == 55.8  # the stored figure wins over its flat copy
    assert s.figures["ttft_p50_ms"] == Figure(value=90.0)
    assert s.figures["memory_growth"].value == 0.4
    assert {k: getattr(s, k) for k in FIGURE_VIEWS} == {k: float(old[k]) for k in FIGURE_VIEWS}


def test_the_stored_shape_keeps_the_flat_names_and_round_trips():
    s = CandidateSummary(candidate="c", model="/m/c.gguf", decode_tps=20.0)
    dumped = json.loads(s.model_dump_json())
    assert dumped["decode_tps"] == 20.0 and dumped["quality_overall"] is None
    assert CandidateSummary.model_validate(dumped) == s


def test_a_median_carries_the_interval_bench_stopped_on():
    """A bench row with the order-statistic interval its repetition stopping judged gives decide
    that interval; a row stored before it keeps [min, max] of its repeats."""
    from edgepick.decide.adapters import _median_figure
    from edgepick.records.bench import MetricStats

    new = MetricStats(median=30.0, min=20.0, max=40.0, unit="tok/s", n=20,
                      median_low=29.0, median_high=31.0)
    old = MetricStats(median=30.0, min=20.0, max=40.0, unit="tok/s", n=5)
    assert (_median_figure(new).low, _median_figure(new).high) == (29.0, 31.0)
    assert (_median_figure(old).low, _median_figure(old).high) == (20.0, 40.0)
