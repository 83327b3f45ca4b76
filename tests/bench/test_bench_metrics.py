"""Metric aggregation on known samples: the definitions of docs/metrics.md, checked by hand."""

from __future__ import annotations

import pytest

from edgepick.bench.metrics import (P99_MIN_SAMPLES, aggregate, request_samples, stats,
                                    sustain_report, window_rates)


def test_stats_median_min_max_and_p99_only_with_enough_samples():
    few = stats([3.0, 1.0, 2.0, 10.0], "ms")
    assert (few.median, few.min, few.max, few.n) == (2.5, 1.0, 10.0, 4)
    assert few.p99 is None  # four samples cannot tell a P99 from the maximum
    many = stats([float(i) for i in range(1, 101)], "ms")
    assert many.median == 50.5
    assert many.p99 == pytest.approx(99.01)  # linear interpolation between ranks 99 and 100
    assert stats([float(i) for i in range(P99_MIN_SAMPLES)], "ms").p99 is not None
    assert stats([None], "ms") is None


def test_request_figures_follow_the_definitions():
    # Submitted at 0; first token at 100 ms; then 100, 100 and 200 ms gaps.
    req = {"prompt_tokens": 16, "generated_tokens": 4, "token_times": [0.1, 0.2, 0.3, 0.5],
           "prefill_s": 0.08, "e2e_s": 0.5}
    s = request_samples(req)
    assert s["ttft_ms"] == pytest.approx(100.0)
    assert s["decode_tps"] == pytest.approx(3 / 0.4)  # tokens after the first ÷ time after it
    assert s["itl_ms"] == pytest.approx([100.0, 100.0, 200.0])
    assert s["e2e_ms"] == pytest.approx(500.0)
    assert s["prefill_tps"] == pytest.approx(16 / 0.08)
    # Without an engine-side prompt time, TTFT is the prefill time.
    s2 = request_samples(dict(req, prefill_s=None))
    assert s2["prefill_tps"] == pytest.approx(16 / 0.1)
    # One token: no decode rate, no ITL.
    s3 = request_samples(dict(req, generated_tokens=1, token_times=[0.1]))
    assert s3["decode_tps"] is None and s3["itl_ms"] == []


def test_aggregate_pools_itl_and_measures_concurrent_throughput():
    r1 = {"prompt_tokens": 8, "generated_tokens": 3, "token_times": [0.1, 0.2, 0.3],
          "prefill_s": 0.05, "e2e_s": 0.3}
    r2 = {"prompt_tokens": 8, "generated_tokens": 3, "token_times": [0.2, 0.3, 0.4],
          "prefill_s": 0.15, "e2e_s": 0.4}
    raw = {"load_s": 0.25, "runs": [{"requests": [r1, r2]}, {"requests": [r1, r2]}]}
    m = aggregate(raw, peak_rss=1000, peak_rss_swap=1200)
    assert m["ttft_ms"].n == 4 and m["ttft_ms"].median == pytest.approx(150.0)
    assert m["itl_ms"].n == 8 and m["itl_ms"].median == pytest.approx(100.0)
    # 6 tokens across both requests, all done 0.4 s after the common submission.
    assert m["throughput_tps"].median == pytest.approx(6 / 0.4)
    assert m["load_ms"].median == pytest.approx(250.0) and m["load_ms"].unit == "ms"
    assert m["peak_rss_bytes"].median == 1000 and m["peak_rss_swap_bytes"].median == 1200
    single = aggregate({"runs": [{"requests": [r1]}]}, None, None)
    assert "throughput_tps" not in single and "peak_rss_bytes" not in single


def test_sustain_windows_and_decay_flag():
    # 10 tokens in the first second, 6 in the second, 4 in the third; a partial 4th is dropped.
    times = [i / 10 for i in range(10)] + [1 + i / 6 for i in range(6)] + \
            [2 + i / 4 for i in range(4)] + [3.1, 3.2]
    assert window_rates(times, 3.5, 1.0) == [10.0, 6.0, 4.0]
    rep = sustain_report({"duration_s": 3.0, "window_s": 1.0, "token_times": times})
    assert rep.decay_pct == pytest.approx(60.0) and rep.flagged
    steady = sustain_report({"duration_s": 2.0, "window_s": 1.0,
                             "token_times": [i / 10 for i in range(20)]})
    assert steady.decay_pct == pytest.approx(0.0) and not steady.flagged
