"""`edgepick monitor`: a running server's figures from its /metrics, each set against the figure
the decision was based on (deploy.yaml's baseline) — seed 000 §7.4: badcase and format-error
rates, TTFT P99, decode speed P5, memory, availability, crashes."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import httpx
from prometheus_client.parser import text_string_to_metric_families

from edgepick.errors import EdgepickError
from edgepick.evaluate.intervals import wilson
from edgepick.records.deploy import Baseline

LATENCY_TOLERANCE = 1.2  # a live latency this many times the baseline's is "worse"


@dataclass
class Scrape:
    """Counters summed over labels; histograms as cumulative (upper bound, count) lists."""

    samples: dict[str, list[tuple[dict, float]]] = field(default_factory=dict)

    def total(self, name: str, **match: str) -> float:
        return sum(v for labels, v in self.samples.get(name, [])
                   if all(labels.get(k) == want for k, want in match.items()))

    def buckets(self, name: str) -> list[tuple[float, float]]:
        acc: dict[float, float] = {}
        for labels, v in self.samples.get(name + "_bucket", []):
            le = float(labels["le"])
            acc[le] = acc.get(le, 0.0) + v
        return sorted(acc.items())

    def labelled(self, name: str) -> list[tuple[dict, float]]:
        return self.samples.get(name, [])


def parse(text: str) -> Scrape:
    s = Scrape()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            s.samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return s


def scrape(url: str, api_key: str | None = None) -> Scrape:
    base = url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = httpx.get(f"{base}/metrics", headers=headers, timeout=10)
    except httpx.HTTPError as exc:
        raise EdgepickError(f"{base}/metrics: {exc}") from None
    if resp.status_code != 200:
        raise EdgepickError(f"{base}/metrics answered {resp.status_code}"
                            + (" (give --api-key)" if resp.status_code == 401 else ""))
    return parse(resp.text)


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus' histogram_quantile: linear inside the bucket holding the q-th observation."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    total = buckets[-1][1]
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if math.isinf(le):
                return prev_le
            inside = count - prev_count
            frac = (rank - prev_count) / inside if inside > 0 else 1.0
            return prev_le + (le - prev_le) * frac
        prev_le, prev_count = le, count
    return prev_le


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


def _rate_row(figure: str, k: float, n: float, base: float | None) -> Row:
    n_i, k_i = int(n), int(k)
    lo, hi = wilson(k_i, n_i)
    row = Row(figure, k_i / n_i if n_i else None, "rate", lo, hi, n_i, base)
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


def figures(s: Scrape, baseline: Baseline | None = None) -> list[Row]:
    b = baseline or Baseline()
    ttft = s.buckets("edgepick_ttft_seconds")
    p50, p99 = quantile(0.5, ttft), quantile(0.99, ttft)
    tps5 = quantile(0.05, s.buckets("edgepick_decode_tokens_per_second"))
    requests = s.total("edgepick_requests_total")
    errors = sum(v for labels, v in s.labelled("edgepick_requests_total")
                 if labels.get("status", "").startswith("5"))
    rejected = s.total("edgepick_rejections_total")
    sampled = s.total("edgepick_sampled_outputs_total")
    rows = [
        _latency_row("TTFT P50", p50 * 1000 if p50 is not None else None, "ms", b.ttft_p50_ms),
        _latency_row("TTFT P99", p99 * 1000 if p99 is not None else None, "ms", b.ttft_p99_ms),
        _latency_row("decode tok/s P5", tps5, "tok/s", b.decode_tps, higher_is_worse=False),
        _latency_row("engine memory (RssAnon+VmSwap)", s.total("edgepick_engine_memory_bytes"),
                     "bytes", b.peak_memory_bytes),
        Row("engine restarts", s.total("edgepick_engine_restarts_total"), "count"),
        Row("engine crashes", s.total("edgepick_engine_restarts_total", reason="crash"), "count"),
        _rate_row("error rate (5xx)", errors, requests, None),
        _rate_row("rejection rate (429, resources)", rejected, requests, None),
        _rate_row("unacceptable (sampled)", s.total("edgepick_sampled_outputs_total",
                                                     verdict="unacceptable"), sampled,
                  b.unacceptable_rate),
        _rate_row("format errors (sampled)", s.total("edgepick_sampled_format_errors_total"),
                  sampled, b.format_error_rate),
    ]
    return rows


def as_dicts(rows: list[Row]) -> list[dict]:
    return [asdict(r) for r in rows]
