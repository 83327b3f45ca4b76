"""The sustained run's timeline (speed, temperature, power, memory per window), throttling
onset and memory growth (docs/metrics.md, "Sustained run")."""

from __future__ import annotations

import numpy as np

from edgepick.power.energy import EnergyCurve
from edgepick.records.bench import SustainReport, TimelinePoint
from edgepick.units import whole_pct

SPEED_DROP = 0.10  # a window 10% slower than the first ...
TEMP_RISE_C = 3.0  # ... after the hottest sensor rose this much: thermal throttling
FREQ_DROP = 0.10  # or the CPU frequency (or its cap) 10% under its first-window value
MEMORY_GROWTH_MAX = 2.0  # MiB per 1000 generated tokens
_MIN_MEMORY_POINTS = 4


def timeline(report: SustainReport, raw: dict, samples, curve: EnergyCurve | None) -> list[TimelinePoint]:
    """`samples`: the sampler's (t, row) readings, rows with "temps" and "freq"."""
    t0, w = raw.get("t0"), report.window_s
    if t0 is None:
        return []
    memory = raw.get("memory_timeline") or []
    points = []
    for k, tps in enumerate(report.window_tps):
        a, b = t0 + k * w, t0 + (k + 1) * w
        rows = [row for t, row in samples if a <= t < b]
        temps = [(v, name) for row in rows for name, v in (row.get("temps") or {}).items()]
        hot = max(temps) if temps else None
        freqs = [row["freq"]["cur_share"] * 1.0 for row in rows if row.get("freq")]
        caps = [row["freq"]["cap_share"] for row in rows if row.get("freq")]
        mem = [m for s, _, m in memory if s <= (k + 1) * w and m is not None]
        share = None
        if freqs:
            share = round(min(sum(freqs) / len(freqs), min(caps)), 3)
        points.append(TimelinePoint(
            t_s=round(k * w, 2), decode_tps=round(tps, 3),
            temperature_c=hot[0] if hot else None, hottest_sensor=hot[1] if hot else None,
            power_w=None if curve is None or curve.watts(a, b) is None else round(curve.watts(a, b), 3),
            anon_swap_bytes=mem[-1] if mem else None, cpu_freq_share=share))
    return points


def throttle_onset(points: list[TimelinePoint]) -> tuple[float | None, str | None]:
    """The first window whose speed fell after the temperature rose, or whose CPU frequency fell
    under its first value: ("throttled after N s", why)."""
    if len(points) < 2:
        return None, None
    base = points[0]
    temp0 = base.temperature_c
    hottest_so_far = temp0
    for p in points[1:]:
        if p.temperature_c is not None:
            hottest_so_far = max(hottest_so_far or p.temperature_c, p.temperature_c)
        slower = base.decode_tps > 0 and p.decode_tps < (1 - SPEED_DROP) * base.decode_tps
        if (slower and temp0 is not None and hottest_so_far is not None
                and hottest_so_far - temp0 >= TEMP_RISE_C):
            drop = 1 - p.decode_tps / base.decode_tps
            return p.t_s, (f"decode {whole_pct(drop)} slower after the hottest sensor rose "
                           f"{hottest_so_far - temp0:.1f} °C")
        if (base.cpu_freq_share and p.cpu_freq_share is not None
                and p.cpu_freq_share < (1 - FREQ_DROP) * base.cpu_freq_share):
            return p.t_s, (f"CPU frequency at {whole_pct(p.cpu_freq_share)} of its maximum "
                           f"(first window {whole_pct(base.cpu_freq_share)})")
    return None, None


def memory_growth(memory: list, threshold: float = MEMORY_GROWTH_MAX) -> tuple[float | None, bool]:
    """Least-squares slope of RssAnon+VmSwap (MiB) over generated tokens, per 1000 tokens.
    `memory`: (s, tokens so far, bytes) per request, from the start of the timed run."""
    pts = [(tok, b / 2**20) for _, tok, b in memory if b is not None]
    if len(pts) < _MIN_MEMORY_POINTS or pts[-1][0] - pts[0][0] <= 0:
        return None, False
    x, y = np.array([p[0] for p in pts], float), np.array([p[1] for p in pts], float)
    slope = float(np.polyfit(x, y, 1)[0]) * 1000
    return round(slope, 3), slope > threshold


def complete(report: SustainReport, raw: dict, samples, curve: EnergyCurve | None,
             threshold: float = MEMORY_GROWTH_MAX) -> SustainReport:
    report.timeline = timeline(report, raw, samples, curve)
    report.throttled_after_s, report.throttle_reason = throttle_onset(report.timeline)
    report.memory_growth_mib_per_1k, report.memory_growth_flagged = memory_growth(
        raw.get("memory_timeline") or [], threshold)
    report.memory_growth_threshold = threshold
    return report
