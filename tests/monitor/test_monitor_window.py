"""`monitor --window`: quantiles from the change of the buckets over the window, as Prometheus'
`histogram_quantile(q, rate(x_bucket[w]))` gives them. The reference is the real Prometheus
engine (`promtool test rules` evaluating a PromQL expression over the same scrapes), not a port.
"""

from __future__ import annotations

import math
import re

import pytest
from prometheus_client import generate_latest

from edgepick.monitor.live import figures, parse
from edgepick.monitor.window import bucket_of, bucket_quantile, parse_window
from edgepick.serve.loop.history import MetricsHistory
from edgepick.serve.metrics import LATENCY_BUCKETS, ServeMetrics
from promtool_tool import promtool, series_values, write_test

STEP_S = 15


def test_bucket_quantile_follows_prometheus_special_cases():
    inf = math.inf
    # linear inside the bucket, 0 as the first bucket's lower bound
    assert bucket_quantile(0.5, [(1.0, 10), (2.0, 20), (inf, 20)]) == pytest.approx(1.0)
    assert bucket_quantile(0.25, [(1.0, 10), (2.0, 20), (inf, 20)]) == pytest.approx(0.5)
    assert bucket_quantile(0.75, [(1.0, 10), (2.0, 20), (inf, 20)]) == pytest.approx(1.5)
    # the rank in +Inf: the second-highest bound
    assert bucket_quantile(0.99, [(1.0, 1), (2.0, 2), (inf, 10)]) == 2.0
    # no +Inf bucket, no observations, q outside [0, 1]
    assert bucket_quantile(0.5, [(1.0, 1), (2.0, 2)]) is None
    assert bucket_quantile(0.5, [(1.0, 0), (inf, 0)]) is None
    assert bucket_quantile(1.5, [(1.0, 1), (inf, 1)]) == inf
    assert bucket_quantile(-1, [(1.0, 1), (inf, 1)]) == -inf
    # a non-monotone scrape is flattened to its envelope, equal bounds merged
    assert bucket_quantile(0.5, [(1.0, 4), (2.0, 3), (inf, 8)]) == pytest.approx(1.0)
    assert bucket_quantile(0.5, [(1.0, 2), (1.0, 2), (inf, 8)]) == pytest.approx(1.0)


def test_parse_window():
    assert parse_window("5m") == 300 and parse_window("90s") == 90
    assert parse_window("1h30m") == 5400 and parse_window("since-start") is None
    for bad in ("5", "5 minutes", "0s", "-1m"):
        with pytest.raises(ValueError):
            parse_window(bad)


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _traffic(m: ServeMetrics, step: int) -> None:
    """A slow start-up (12 s first tokens for a minute), then fast answers."""
    if step < 60 // STEP_S:
        for _ in range(5):
            m.ttft.labels("edge").observe(12.0)
    else:
        for i in range(10):
            m.ttft.labels("edge").observe(0.04 + 0.09 * ((step * 7 + i * 3) % 10))


def _bucket_series(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line.startswith("edgepick_ttft_seconds_bucket{"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_window_p99_excludes_a_slow_start_and_equals_prometheus(tmp_path):
    clock = Clock()
    m = ServeMetrics()
    history = MetricsHistory(m.registry, every_s=STEP_S, clock=clock)
    scrapes: list[dict[str, float]] = []
    steps = 600 // STEP_S  # ten minutes of scrapes, one every 15 s
    for step in range(steps + 1):
        clock.t = step * STEP_S
        if step:
            _traffic(m, step - 1)
            history.take()
        scrapes.append(_bucket_series(generate_latest(m.registry).decode()))
    now = parse(generate_latest(m.registry).decode())
    age, old_text = history.at(300)
    assert age == pytest.approx(300)
    windowed = {r.figure: r.live for r in figures(now.since(parse(old_text)))}
    since_start = {r.figure: r.live for r in figures(now)}
    p99_ms = windowed["TTFT P99"]
    assert since_start["TTFT P99"] > 5000  # the start-up holds the cumulative P99 ...
    assert p99_ms < 1000  # ... the last five minutes do not

    # the same scrapes through the real Prometheus engine
    names = sorted(scrapes[-1])
    series = [{"series": n, "values": series_values([s.get(n, 0.0) for s in scrapes])}
              for n in names]
    windowed_expr = "histogram_quantile(0.99, sum by (le) (rate(edgepick_ttft_seconds_bucket[5m])))"
    prom = _prometheus(tmp_path, series, windowed_expr, "10m", p99_ms / 1000)
    bounds = list(LATENCY_BUCKETS)
    assert bucket_of(prom, bounds) == bucket_of(p99_ms / 1000, bounds)
    assert prom == pytest.approx(p99_ms / 1000, rel=1e-9)
    whole = _prometheus(tmp_path, series, "histogram_quantile(0.99, sum by (le) "
                        "(edgepick_ttft_seconds_bucket))", "10m", since_start["TTFT P99"] / 1000)
    assert whole == pytest.approx(since_start["TTFT P99"] / 1000, rel=1e-9)


def _prometheus(tmp_path, series: list[dict], expr: str, at: str, guess: float) -> float:
    """The value Prometheus gives `expr` at `at`: promtool passes when it equals `guess`, and
    otherwise prints what it got."""
    test = write_test(tmp_path / "expr_test.yaml", [{
        "interval": f"{STEP_S}s", "input_series": series,
        "promql_expr_test": [{"expr": expr, "eval_time": at,
                              "exp_samples": [{"labels": "{}", "value": guess}]}]}])
    r = promtool("test", "rules", str(test))
    if r.returncode == 0:
        return guess
    got = re.search(r"got: \{[^}]*\} ([0-9.Ee+-]+)", r.stdout + r.stderr)
    assert got, r.stdout + r.stderr
    return float(got.group(1))


def test_history_answers_the_start_when_younger_than_the_window():
    clock = Clock()
    m = ServeMetrics()
    history = MetricsHistory(m.registry, every_s=10, clock=clock)
    m.ttft.labels("edge").observe(0.2)
    clock.t = 20
    history.take()
    age, text = history.at(300)
    assert age == 20 and "edgepick_ttft_seconds_bucket{" not in text  # the all-zero start
    # a counter that went down (the server restarted) counts from zero
    before = parse(generate_latest(m.registry).decode())
    fresh = parse(generate_latest(ServeMetrics().registry).decode())
    assert fresh.since(before).total("edgepick_ttft_seconds_count") == 0


def test_drift_on_task_mix_unacceptable_rate_and_lengths(monkeypatch):
    from edgepick.monitor import drift as drift_mod
    from edgepick.records.deploy import DeployConfig, DeployModel, Gate, TaskRoute

    m = ServeMetrics()
    for _ in range(30):
        m.sampled.labels("ok").inc()
        m.sampled_by_task.labels("qa", "ok").inc()
        m.prompt_tokens.observe(100)
    for _ in range(30):
        m.sampled.labels("unacceptable").inc()
        m.sampled_by_task.labels("extraction", "unacceptable").inc()
        m.prompt_tokens.observe(3000)
    deploy = DeployConfig(model=DeployModel(name="m", path="/m", sha256="0" * 64),
                          scenario="realtime_chat", routes=[TaskRoute(task="qa", share=1.0)],
                          gates=[Gate(metric="unacceptable_rate", value=0.02, low=0.0,
                                      high=0.05, limit=0.05)])
    monkeypatch.setattr(drift_mod, "_scenario_lengths",
                        lambda d: {"context_tokens": {"p50": 200, "p95": 1000}})
    found = {f.what: f for f in drift_mod.drift(parse(generate_latest(m.registry).decode()),
                                                deploy)}
    assert found["unacceptable rate"].drift
    assert found["task mix: extraction"].drift and found["task mix: qa"].drift
    assert found["prompt tokens P95"].drift and found["prompt tokens P95"].decided == "1000"
    assert "answer tokens P95" not in found  # nothing observed: nothing said


def test_crash_rate_interval_is_garwoods():
    from edgepick.monitor.live import poisson_interval

    assert poisson_interval(0) == (0.0, pytest.approx(3.6889, abs=1e-4))
    assert poisson_interval(1) == (pytest.approx(0.0253, abs=1e-4), pytest.approx(5.5716, abs=1e-4))
    assert poisson_interval(10) == (pytest.approx(4.7954, abs=1e-4), pytest.approx(18.3904, abs=1e-4))
    lo, hi = poisson_interval(1000)
    assert lo == pytest.approx(938.0, rel=2e-3) and hi == pytest.approx(1063.0, rel=2e-3)
