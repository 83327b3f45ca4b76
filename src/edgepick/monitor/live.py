"""`edgepick monitor`: a running server's figures from its /metrics, each set against the figure
the decision was based on (deploy.yaml's baseline) — seed 000 §7.4: badcase, user-feedback and
format-error rates; TTFT P99, decode speed P5, peak memory; availability, OOM count, crash rate.

By default over the last five minutes: every counter and histogram bucket is
taken as its change since the server's own snapshot of that time (`/metrics/history`), and the
quantiles come from the changed buckets as Prometheus' `histogram_quantile(q, rate(...[5m]))`
does (monitor/window.py). Gauges (memory now, the peak since start) are read as they are.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import httpx
from prometheus_client.parser import text_string_to_metric_families

from edgepick.errors import EdgepickError
from edgepick.evaluate.intervals import wilson
from edgepick.monitor.window import bucket_quantile, increase
from edgepick.records.deploy import Baseline, DeployConfig

LATENCY_TOLERANCE = 1.2  # a live latency this many times the baseline's is "worse"
COUNTER_TYPES = ("counter", "histogram", "summary")
AGE_HEADER = "x-edgepick-snapshot-age-seconds"


def _key(labels: dict) -> tuple:
    return tuple(sorted(labels.items()))


@dataclass
class Scrape:
    """Samples by name as (labels, value); `counters` names the cumulative ones."""

    samples: dict[str, list[tuple[dict, float]]] = field(default_factory=dict)
    counters: set[str] = field(default_factory=set)

    def total(self, name: str, **match: str) -> float:
        return sum(v for labels, v in self.samples.get(name, [])
                   if all(labels.get(k) == want for k, want in match.items()))

    def has(self, name: str) -> bool:
        return name in self.samples

    def buckets(self, name: str) -> list[tuple[float, float]]:
        acc: dict[float, float] = {}
        for labels, v in self.samples.get(name + "_bucket", []):
            le = float(labels["le"])
            acc[le] = acc.get(le, 0.0) + v
        return sorted(acc.items())

    def labelled(self, name: str) -> list[tuple[dict, float]]:
        return self.samples.get(name, [])

    def since(self, before: "Scrape | None") -> "Scrape":
        """Counters as their increase since `before` (a reset counts from zero), gauges now."""
        if before is None:
            return self
        out = Scrape(counters=set(self.counters))
        for name, rows in self.samples.items():
            if name not in self.counters:
                out.samples[name] = rows
                continue
            old = {_key(lb): v for lb, v in before.samples.get(name, [])}
            out.samples[name] = [(lb, increase(v, old.get(_key(lb)))) for lb, v in rows]
        return out


def parse(text: str) -> Scrape:
    s = Scrape()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            s.samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
            if family.type in COUNTER_TYPES and not sample.name.endswith("_created"):
                s.counters.add(sample.name)
    return s


def _get(url: str, headers: dict, params: dict | None = None) -> httpx.Response:
    try:
        resp = httpx.get(url, headers=headers, params=params, timeout=10)
    except httpx.HTTPError as exc:
        raise EdgepickError(f"{url}: {exc}") from None
    if resp.status_code != 200:
        raise EdgepickError(f"{url} answered {resp.status_code}"
                            + (" (give --api-key)" if resp.status_code == 401 else ""))
    return resp


def scrape(url: str, api_key: str | None = None) -> Scrape:
    base = url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return parse(_get(f"{base}/metrics", headers).text)


@dataclass
class Window:
    asked_s: float | None  # None: since start
    used_s: float | None  # the snapshot's real age (the server's uptime when it is younger)
    since_start: bool

    def describe(self) -> str:
        if self.since_start:
            return "since start"
        used = f"{self.used_s:.0f} s" if self.used_s is not None else "?"
        return f"last {used}" + (" (the server is younger than the window: since start)"
                                 if self.asked_s and self.used_s is not None
                                 and self.used_s < self.asked_s - 1 else "")


def scrape_window(url: str, api_key: str | None,
                  window_s: float | None) -> tuple[Scrape, Window]:
    """Now's scrape over the window: counters as their change since the server's snapshot of
    `window_s` ago. A server without /metrics/history (older edgepick): since start, said."""
    base = url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    if window_s is None:
        s = parse(_get(f"{base}/metrics", headers).text)
        return s, Window(None, _uptime(s), True)
    try:
        old = httpx.get(f"{base}/metrics/history", params={"ago": window_s}, headers=headers,
                        timeout=10)
    except httpx.HTTPError as exc:
        raise EdgepickError(f"{base}/metrics/history: {exc}") from None
    now = parse(_get(f"{base}/metrics", headers).text)
    if old.status_code != 200:
        return now, Window(window_s, _uptime(now), True)
    age = float(old.headers.get(AGE_HEADER, "nan"))
    return now.since(parse(old.text)), Window(window_s, None if math.isnan(age) else age, False)


def _uptime(s: Scrape) -> float | None:
    return s.total("edgepick_uptime_seconds_total") if s.has("edgepick_uptime_seconds_total") \
        else None


# the same quantile as Prometheus' histogram_quantile (kept under its old name for callers)
quantile = bucket_quantile


@dataclass
class Row:
    figure: str
    live: float | None
    unit: str
    low: float | None = None
    high: float | None = None
    n: int | None = None
    baseline: float | None = None
    verdict: str = "-"  # ok | worse | undetermined | -
    baseline_low: float | None = None
    baseline_high: float | None = None


def _rate_row(figure: str, k: float, n: float, base: float | None) -> Row:
    n_i, k_i = int(round(n)), int(round(k))
    lo, hi = wilson(k_i, n_i)
    row = Row(figure, k_i / n_i if n_i else None, "rate", lo if n_i else None,
              hi if n_i else None, n_i, base)
    if base is not None and n_i:
        row.verdict = "worse" if lo > base else "ok" if hi <= base else "undetermined"
    return row


def _latency_row(figure: str, value: float | None, unit: str, base: float | None,
                 higher_is_worse: bool = True) -> Row:
    row = Row(figure, value, unit, baseline=base)
    if base and value is not None:
        worse = value > base * LATENCY_TOLERANCE if higher_is_worse else \
            value < base / LATENCY_TOLERANCE
        row.verdict = "worse" if worse else "ok"
    return row


def _poisson_cdf(k: int, mu: float) -> float:
    if mu <= 0:
        return 1.0
    term = total = math.exp(-mu)
    for i in range(1, k + 1):
        term *= mu / i
        total += term
    return min(total, 1.0)


def _solve(f, target: float, hi: float) -> float:
    """The mu in [0, hi] where the decreasing f(mu) crosses target, by bisection."""
    lo = 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def poisson_interval(k: int, alpha: float = 0.05) -> tuple[float, float]:
    """Garwood's exact 95% interval of a Poisson count k; the rate interval is this over the
    exposure (k = 0 gives [0, 3.689])."""
    if k > 300:  # exp(-mu) underflows; the normal approximation is within 0.1% here
        half = 1.959963984540054 * math.sqrt(k)
        return k - half, k + half + 1
    hi_bound = 10.0 + 10 * k
    upper = _solve(lambda mu: _poisson_cdf(k, mu), alpha / 2, hi_bound)
    if k == 0:
        return 0.0, upper
    lower = _solve(lambda mu: _poisson_cdf(k - 1, mu), 1 - alpha / 2, hi_bound)
    return lower, upper


def _crash_row(crashes: float, uptime_s: float | None) -> Row:
    if not uptime_s:
        return Row("crash rate", None, "/h")
    hours = uptime_s / 3600
    lo, hi = poisson_interval(int(crashes))
    return Row("crash rate", crashes / hours, "/h", lo / hours, hi / hours, int(crashes))


def tasks_of(s: Scrape) -> list[str]:
    return sorted({lb.get("task", "") for lb, _ in s.labelled("edgepick_sampled_task_outputs_total")}
                  - {""})


def figures(s: Scrape, baseline: Baseline | None = None,
            deploy: DeployConfig | None = None) -> list[Row]:
    b = baseline or (deploy.baseline if deploy else None) or Baseline()
    ttft = s.buckets("edgepick_ttft_seconds")
    p50, p99 = quantile(0.5, ttft), quantile(0.99, ttft)
    tps5 = quantile(0.05, s.buckets("edgepick_decode_tokens_per_second"))
    requests = s.total("edgepick_requests_total")
    errors = sum(v for labels, v in s.labelled("edgepick_requests_total")
                 if labels.get("status", "").startswith("5"))
    answered = sum(v for labels, v in s.labelled("edgepick_requests_total")
                   if labels.get("status") == "200")
    rejected = s.total("edgepick_rejections_total")
    sampled = s.total("edgepick_sampled_outputs_total")
    uptime = _uptime(s)
    ready_s = s.total("edgepick_ready_seconds_total") if s.has("edgepick_ready_seconds_total") \
        else None
    crashes = s.total("edgepick_engine_restarts_total", reason="crash")
    peak = s.total("edgepick_engine_peak_memory_bytes") \
        if s.has("edgepick_engine_peak_memory_bytes") else None
    rows = [
        _latency_row("TTFT P50", p50 * 1000 if p50 is not None else None, "ms", b.ttft_p50_ms),
        _latency_row("TTFT P99", p99 * 1000 if p99 is not None else None, "ms", b.ttft_p99_ms),
        _latency_row("decode tok/s P5", tps5, "tok/s", b.decode_tps, higher_is_worse=False),
        Row("engine memory (RssAnon+VmSwap)", s.total("edgepick_engine_memory_bytes"), "bytes"),
        _latency_row("peak engine memory since start", peak, "bytes", b.peak_memory_bytes),
        # only where serve found a power counter / sensor (docs/metrics.md, "Energy")
        _latency_row("device power", s.total("edgepick_power_watts")
                     if s.has("edgepick_power_watts") else None, "W", b.power_w),
        _latency_row("hottest temperature", max((v for _, v in s.labelled(
            "edgepick_temperature_celsius")), default=None), "°C", b.temperature_c),
        Row("availability (time ready)", ready_s / uptime if uptime and ready_s is not None
            else None, "rate"),
        _rate_row("availability (requests without 5xx)", requests - errors, requests, None),
        Row("engine restarts", s.total("edgepick_engine_restarts_total"), "count"),
        Row("engine crashes", crashes, "count"),
        _crash_row(crashes, uptime),
        Row("OOM kills", s.total("edgepick_engine_oom_kills_total")
            if s.has("edgepick_engine_oom_kills_total") else None, "count"),
        Row("engine killed by SIGKILL", s.total("edgepick_engine_exits_total", signal="SIGKILL")
            if s.has("edgepick_engine_exits_total") else None, "count"),
        _rate_row("error rate (5xx)", errors, requests, None),
        _rate_row("rejection rate (429, resources)", rejected, requests, None),
        _rate_row("user feedback rate (down / answered)",
                  s.total("edgepick_feedback_total", rating="down"), answered, None),
        Row("feedback received", s.total("edgepick_feedback_total")
            if s.has("edgepick_feedback_total") else None, "count"),
        _rate_row("unacceptable (sampled)", s.total("edgepick_sampled_outputs_total",
                                                     verdict="unacceptable"), sampled,
                  b.unacceptable_rate),
        _rate_row("format errors (sampled)", s.total("edgepick_sampled_format_errors_total"),
                  sampled, b.format_error_rate),
        _rate_row("badcases (sampled: unacceptable or rated down)",
                  s.total("edgepick_badcases_total"), sampled,
                  b.badcases_per_1000 / 1000 if b.badcases_per_1000 is not None else None),
    ]
    routes = {r.task: r for r in (deploy.routes if deploy else [])}
    for task in tasks_of(s):
        n = s.total("edgepick_sampled_task_outputs_total", task=task)
        route = routes.get(task)
        base = route.badcases_per_1000 / 1000 if route and route.badcases_per_1000 is not None \
            else None
        row = _rate_row(f"badcases (sampled, {task})", s.total("edgepick_badcases_total",
                                                              task=task), n, base)
        if route is not None and route.low is not None:
            row.baseline_low, row.baseline_high = route.low / 1000, (route.high or 0) / 1000
        rows.append(row)
        rows.append(_rate_row(f"format errors (sampled, {task})",
                              s.total("edgepick_sampled_task_format_errors_total", task=task),
                              n, None))
    return rows


def as_dicts(rows: list[Row]) -> list[dict]:
    return [asdict(r) for r in rows]
