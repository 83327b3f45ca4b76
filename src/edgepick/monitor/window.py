"""Figures over a recent window, as Prometheus computes them: the change of each counter and
histogram bucket between a scrape taken `window` ago and now, and `histogram_quantile` over the
changed buckets (`histogram_quantile(q, rate(x_bucket[window]))`: rate's per-second scaling
cancels in a quantile, so the increase gives the same value). A window, not the server's whole life: a few slow
requests at start-up must not hold the P99 for the rest of the run."""

from __future__ import annotations

import math
import re

SINCE_START = "since-start"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_window(text: str) -> float | None:
    """'5m', '90s', '1h30m', or 'since-start' (None: every count since the server started)."""
    t = text.strip().lower()
    if t in (SINCE_START, "start", "all"):
        return None
    parts = re.findall(r"(\d+(?:\.\d+)?)([smhd])", t)
    if not parts or "".join(n + u for n, u in parts) != t:
        raise ValueError(f"window '{text}': expected a duration such as 5m, 90s, 1h, or "
                         f"{SINCE_START}")
    seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise ValueError(f"window '{text}' must be longer than zero")
    return seconds


def bucket_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus' bucketQuantile (promql/quantile.go) on cumulative (upper bound, count) pairs:
    linear inside the bucket holding rank q·total, 0 as the lowest bucket's lower bound, and
    the second-highest bound when the rank falls in +Inf. None where Prometheus gives NaN
    (no observations, no +Inf bucket, fewer than two buckets)."""
    if math.isnan(q):
        return None
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    bs = sorted(buckets)
    if not bs or not math.isinf(bs[-1][0]):
        return None
    merged: list[list[float]] = []
    for le, count in bs:  # coalesce equal bounds
        if merged and merged[-1][0] == le:
            merged[-1][1] += count
        else:
            merged.append([le, count])
    # float noise first (relative 1e-12), then the monotone envelope, as Prometheus does
    prev = merged[0][1]
    for b in merged[1:]:
        delta = abs(b[1] - prev)
        if delta and b[1] and delta / b[1] <= 1e-12:
            b[1] = prev
        elif delta:
            prev = b[1]
    top = merged[0][1]
    for b in merged[1:]:
        top = b[1] = max(top, b[1])
    if len(merged) < 2:
        return None
    total = merged[-1][1]
    if total == 0:
        return None
    rank = q * total
    b = next((i for i in range(len(merged) - 1) if merged[i][1] >= rank), len(merged) - 1)
    if b == len(merged) - 1:
        return merged[-2][0]
    if b == 0 and merged[0][0] <= 0:
        return merged[0][0]
    start, end, count = 0.0, merged[b][0], merged[b][1]
    if b > 0:
        start = merged[b - 1][0]
        count -= merged[b - 1][1]
        rank -= merged[b - 1][1]
    return start + (end - start) * (rank / count)


def bucket_of(value: float, bounds: list[float]) -> int:
    """Index of the bucket (upper bounds, ascending) a value falls in: for 'within one bucket'."""
    return next((i for i, le in enumerate(bounds) if value <= le), len(bounds))


def increase(now: float, before: float | None) -> float:
    """A counter's change; a smaller value now means the server restarted (a counter reset):
    then the count now is all that happened since, as Prometheus' rate assumes."""
    if before is None or now < before:
        return now
    return now - before
