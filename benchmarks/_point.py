"""One bench point of a candidate in its own worker process, measured as `edgepick bench`
measures it: the step shared by the benchmarks that set edgepick beside another tool."""

from __future__ import annotations


def point_figures(cand, n_prompt: int, n_gen: int, repeats: int) -> dict[str, float]:
    """Median prefill and decode tok/s over `repeats` (after one warm-up), and the worker's
    peak RSS in MiB."""
    from edgepick.bench.measure import measure_point
    from edgepick.bench.metrics import aggregate
    from edgepick.launch import run_isolated

    out = run_isolated(measure_point, cand.model_dump(),
                       {"prompt_tokens": n_prompt, "gen_tokens": n_gen, "warmup": 1,
                        "repeats": repeats}, timeout=1800)
    if not out.ok:
        raise SystemExit(f"edgepick bench of {cand.name} failed: {out.error}")
    m = aggregate(out.value, None, None)
    return {"prefill_tps": m["prefill_tps"].median, "decode_tps": m["decode_tps"].median,
            "peak_rss_mib": out.peak_rss_bytes / 2**20}
