"""Raw samples from a worker → the named metrics (definitions in docs/metrics.md).

Aggregation runs in the parent so the rules live in one place: median with min and max always,
P99 only from `P99_MIN_SAMPLES` samples up (with fewer it is just the maximum under another name),
and the median's interval where each repetition gives one value (bench/median_ci.py).
"""

from __future__ import annotations

import numpy as np

from edgepick.bench.median_ci import median_interval
from edgepick.bench.need import need_bytes
from edgepick.records.bench import MetricStats, SustainReport

P99_MIN_SAMPLES = 20
DECAY_FLAG_PCT = 30.0

UNITS = {
    "ttft_ms": "ms", "prefill_tps": "tok/s", "decode_tps": "tok/s", "itl_ms": "ms",
    "e2e_ms": "ms", "load_ms": "ms", "peak_rss_bytes": "bytes", "peak_rss_swap_bytes": "bytes",
    "throughput_tps": "tok/s", "window_tps": "tok/s",
    # the split of the need (bench/need.py, docs/metrics.md)
    "peak_rss_anon_bytes": "bytes", "peak_rss_file_bytes": "bytes", "file_read_bytes": "bytes",
    "peak_need_bytes": "bytes",
}


def stats(samples: list[float], unit: str) -> MetricStats | None:
    xs = np.asarray([s for s in samples if s is not None], dtype=np.float64)
    if xs.size == 0:
        return None
    p99 = float(np.percentile(xs, 99)) if xs.size >= P99_MIN_SAMPLES else None
    return MetricStats(median=float(np.median(xs)), min=float(xs.min()), max=float(xs.max()),
                       p99=p99, unit=unit, n=int(xs.size))


def request_samples(req: dict) -> dict[str, float | list[float] | None]:
    """Per-request figures from one raw request record (times in seconds from submission)."""
    times = req["token_times"]
    n_gen = req["generated_tokens"]
    prefill_s = req.get("prefill_s")
    out: dict = {"ttft_ms": None, "decode_tps": None, "e2e_ms": None, "prefill_tps": None,
                 "itl_ms": []}
    if times:
        out["ttft_ms"] = times[0] * 1e3
        out["e2e_ms"] = req.get("e2e_s", times[-1]) * 1e3
        out["itl_ms"] = [(b - a) * 1e3 for a, b in zip(times, times[1:])]
        span = times[-1] - times[0]
        # Tokens after the first ÷ time after the first (counted tokens, not chunks, over HTTP).
        if n_gen > 1 and span > 0:
            out["decode_tps"] = (n_gen - 1) / span
    if prefill_s is None and times:
        prefill_s = times[0]  # no engine-side prompt timing: the whole TTFT counts as prefill
    n_prefilled = req.get("prefill_tokens") or req["prompt_tokens"]
    if prefill_s and prefill_s > 0:
        out["prefill_tps"] = n_prefilled / prefill_s
    return out


def aggregate(raw: dict, peak_rss: int | None, peak_rss_swap: int | None) -> dict[str, MetricStats]:
    """`raw` is what bench.measure returns: `runs`, each a list of concurrent requests."""
    acc: dict[str, list[float]] = {k: [] for k in
                                   ("ttft_ms", "prefill_tps", "decode_tps", "itl_ms", "e2e_ms",
                                    "throughput_tps")}
    for run in raw.get("runs", []):
        for req in run["requests"]:
            s = request_samples(req)
            for k in ("ttft_ms", "prefill_tps", "decode_tps", "e2e_ms"):
                if s[k] is not None:
                    acc[k].append(s[k])
            acc["itl_ms"].extend(s["itl_ms"])
        if len(run["requests"]) > 1:
            total = sum(r["generated_tokens"] for r in run["requests"])
            span = max(r.get("e2e_s") or 0.0 for r in run["requests"])
            if span > 0:
                acc["throughput_tps"].append(total / span)
    if raw.get("load_s") is not None:
        acc["load_ms"] = [raw["load_s"] * 1e3]
    if peak_rss:
        acc["peak_rss_bytes"] = [float(peak_rss)]
    if peak_rss_swap:
        acc["peak_rss_swap_bytes"] = [float(peak_rss_swap)]
    acc.update(_memory_split(raw.get("memory"), peak_rss))
    out = {}
    for name, samples in acc.items():
        st = stats(samples, UNITS[name])
        if st is not None:
            out[name] = st
    _median_intervals(out, acc, raw)
    return out


# One value per repetition at concurrency 1 (throughput: one per run at any concurrency): the
# repetitions are the independent units the median's interval counts.
PER_RUN = ("ttft_ms", "prefill_tps", "decode_tps", "e2e_ms")


def _median_intervals(out: dict[str, MetricStats], acc: dict, raw: dict) -> None:
    """Each per-run metric's median interval under the loop's schedule (raw["repetitions"]:
    min and max; a worker without it ran a fixed count), the same the stopping rule saw."""
    runs = raw.get("runs", [])
    if not runs:
        return
    rep = raw.get("repetitions") or {}
    n_min, n_max = rep.get("min", len(runs)), rep.get("max", len(runs))
    single = all(len(r["requests"]) == 1 for r in runs)
    for name in (*PER_RUN, "throughput_tps") if single else ("throughput_tps",):
        if name in out:
            ci = median_interval(acc[name], n_min, n_max)
            if ci is not None:
                out[name].median_low, out[name].median_high = ci


def _memory_split(mem: dict | None, peak_rss: int | None) -> dict[str, list[float]]:
    """RssAnon and RssFile at the end of the timed runs (the KV cache and compute buffers stay
    allocated until unload, so the anonymous figure is its peak), the file pages read after
    load, and the need they make: the figure fit's total predicts (bench/need.py)."""
    if not mem or not peak_rss:
        return {}

    out = {"peak_rss_anon_bytes": [float(mem["anon"])], "peak_rss_file_bytes": [float(mem["file"])]}
    if mem.get("file_read") is not None:
        out["file_read_bytes"] = [float(mem["file_read"])]
    value = need_bytes(mem["anon"], mem.get("file_read"), peak_rss, mem.get("mmap", True))
    if value:
        out["peak_need_bytes"] = [float(value)]
    return out


def window_rates(token_times: list[float], duration_s: float, window_s: float) -> list[float]:
    """Tokens that arrived in each whole window ÷ window length; a trailing partial window is
    dropped because its rate would be biased low or high by where the run stopped."""
    n_windows = int(duration_s // window_s)
    counts = [0] * n_windows
    for t in token_times:
        i = int(t // window_s)
        if 0 <= i < n_windows:
            counts[i] += 1
    return [c / window_s for c in counts]


def sustain_window(duration_s: float) -> float:
    """About ten windows, none shorter than a second."""
    return max(1.0, duration_s / 10.0)


def sustain_report(raw: dict) -> SustainReport:
    duration = raw["duration_s"]
    window = raw.get("window_s") or sustain_window(duration)
    rates = window_rates(raw["token_times"], duration, window)
    decay = None
    if len(rates) >= 2 and rates[0] > 0:
        decay = (rates[0] - rates[-1]) / rates[0] * 100.0
    return SustainReport(duration_s=duration, window_s=window, window_tps=rates, decay_pct=decay,
                         flagged=decay is not None and decay > DECAY_FLAG_PCT,
                         threshold_pct=DECAY_FLAG_PCT, requests=raw.get("requests", 0),
                         rss_start_bytes=raw.get("rss_start"), rss_end_bytes=raw.get("rss_end"))
