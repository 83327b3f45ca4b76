"""Fit planner vs measurement: predicted and measured peak memory and decode tok/s.

Builds a few quant types of the bundled SmolLM2-135M and Gemma-3-270M with llama.cpp's quantizer,
plus a synthetic 256-aligned Llama shape (src/edgepick/models/synthetic.py) at Q4_K_M and Q3_K_M,
then for two context sizes measures each in its own worker process (peak RSS, decode tok/s at the
KV fill the planner assumes: half the context) in two passes and prints the ratios. Targets
(issue 2): memory within ±10%, decode within ±20%. The estimates use this machine probed once
with its engine calibration, as `fit --device local --calibrate` gives a user; the last column
gives the AVX2 constants alone for comparison. research/fit_rows.py runs the same check with the
engine probe beside every measurement and saves the rows a recalibration needs.
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

from edgepick.assets.synthetic import synthetic_llama
from edgepick.assets import bundled
from edgepick.bench.measure import measure_point
from edgepick.launch import run_isolated
from edgepick.devices.probe import probe
from edgepick.fit.memory import attention_load
from edgepick.fit.planner import fit_one, plan_tensors
from edgepick.fit.speed import weights_read_per_token
from edgepick.models.gguf_info import gguf_spec
from edgepick.quantize.ladder import build_ladder
from edgepick.records import Candidate, DeviceProfile, RuntimeSettings

Conditions = Any  # research/conditions.ProbeBeside: before_each(device), device_at(i), summary()

CONTEXTS = (2048, 8192)
GEN = 64
REPEATS = 2  # per pass, after one warm-up run
# A shared host slows a run by 10-40% for minutes at a time, more than the tolerance being tested,
# so every configuration is measured in PASSES passes run in opposite orders and the faster
# pass counts: interference can only slow a run, never speed it up.
PASSES = int(os.environ.get("EDGEPICK_FIT_PASSES", "2"))
MEM_TOL, SPEED_TOL = 0.10, 0.20


def candidates() -> list[str]:
    out_dir = bundled.cache_dir() / "fit_accuracy"
    smol = [f.path for f in build_ladder(str(bundled.smollm2_f16()), ["Q8_0", "Q4_0", "Q4_K_M"],
                                         out_dir)]
    gemma = [f.path for f in build_ladder(str(bundled.gemma3_270m_f16()), ["Q8_0", "Q4_0"], out_dir)]
    synth = [f.path for f in build_ladder(str(synthetic_llama()), ["Q4_K_M", "Q3_K_M"], out_dir)]
    return [str(bundled.smollm2_f16()), *smol, str(bundled.gemma3_270m_q4_k_m()), *gemma, *synth]


def decode_tps(run: dict) -> float:
    times = run["requests"][0]["token_times"]
    return (len(times) - 1) / (times[-1] - times[0])


def measure(path: str, ctx: int, prompt: int, threads: int):
    cand = Candidate(model=path, settings=RuntimeSettings(n_ctx=ctx, threads=threads))
    return run_isolated(measure_point, cand.model_dump(),
                        {"prompt_tokens": prompt, "gen_tokens": GEN, "warmup": 1,
                         "repeats": REPEATS})


def measure_passes(configs: list[tuple[str, int, int]], device: DeviceProfile,
                   conditions: Conditions | None = None):
    """Decode tok/s per pass (with the index of the conditions taken just before it), peak RSS
    and errors per (path, ctx, prompt tokens); pass 2 runs in reverse order."""
    tps: dict[tuple, list[tuple[float, int]]] = {c: [] for c in configs}
    peak: dict[tuple, int] = {}
    errors: dict[tuple, str] = {}
    taken = 0
    for n in range(PASSES):
        for c in (configs if n % 2 == 0 else configs[::-1]):
            if c in errors:
                continue
            if conditions is not None:
                conditions.before_each(device)
            taken += 1
            out = measure(*c, device.cores or 2)
            if not out.ok:
                errors[c] = out.error or "failed"
                continue
            tps[c].append((statistics.median(decode_tps(r) for r in out.value["runs"]),
                           taken - 1))
            peak[c] = max(peak.get(c, 0), out.peak_rss_bytes)
            print(f"  pass {n + 1}: {Path(c[0]).name} ctx {c[1]} fill {c[2]}: {tps[c][-1][0]:.1f} "
                  f"tok/s, {out.peak_rss_bytes / 2**20:.0f} MiB", flush=True)
    return tps, peak, errors


def device_over_run(device: DeviceProfile, bandwidths: list[float]) -> DeviceProfile:
    """This host's probed bandwidth moves by ±15% from one probe to the next, independently of
    the decode speed measured beside it; the constants-only estimates use the run's median."""
    bw = statistics.median(bandwidths) if bandwidths else device.bandwidth_gbps
    print(f"bandwidth: {device.bandwidth_gbps:.1f} GB/s at the start; median of the "
          f"{len(bandwidths)} probes beside the measurements {bw:.1f} GB/s "
          f"(range {min(bandwidths, default=bw):.1f}-{max(bandwidths, default=bw):.1f})", flush=True)
    return device.model_copy(update={"bandwidth_gbps": round(bw, 2), "decode_calibration": None})


def compare(name: str, ctx: int, est, peak: int, measured: float, passes: list[float],
            constants_only: float) -> bool:
    """Print one row of predicted vs measured; True when both are within their targets."""
    mem_r, tps_r = est.total_bytes / peak, est.decode_tps_estimate / measured
    ok = abs(mem_r - 1) <= MEM_TOL and abs(tps_r - 1) <= SPEED_TOL
    runs = "/".join(f"{v:.1f}" for v in passes)
    print(f"{name:46} {ctx:>5} {est.total_bytes / 2**20:8.0f}M {peak / 2**20:8.0f}M "
          f"{mem_r:6.2f} {est.decode_tps_estimate:10.1f} {measured:10.1f} {runs:>11} "
          f"{tps_r:6.2f} {constants_only / measured:9.2f}{'' if ok else '  <-- outside target'}",
          flush=True)
    return ok


HEADER = (f"{'model':46} {'ctx':>5} {'mem pred':>9} {'mem meas':>9} {'ratio':>6} "
          f"{'tok/s pred':>10} {'tok/s meas':>10} {'passes':>11} {'ratio':>6} {'constants':>9}")


def check(configs: list[tuple[str, int, int]], device: DeviceProfile,
          conditions: Conditions | None = None,
          on_rows: Callable[[list[dict], DeviceProfile], None] | None = None) -> int:
    """Measure (path, ctx, prompt tokens) configurations, print predicted vs measured and return
    how many miss a target. Each estimate uses `device`, or with `conditions` the conditions
    around its own measurement; `on_rows` gets the rows and the constants-only device."""
    tps, peak, errors = measure_passes(configs, device, conditions)
    plain = device.model_copy(update={"decode_calibration": None})
    if conditions is not None:
        print(conditions.summary())
        plain = device_over_run(device, conditions.bandwidths())
    print(HEADER)
    misses = 0
    rows: list[dict] = []
    for c in configs:
        path, ctx, prompt = c
        name = Path(path).name + ("" if prompt == ctx // 2 else f" @{prompt}")
        if c in errors:
            print(f"{name:46} {ctx:>5} FAILED: {errors[c]}")
            misses += 1
            continue
        measured, at = max(tps[c])  # host interference only ever slows a pass down
        spec = gguf_spec(path)
        here = conditions.device_at(at) if conditions is not None else device
        est = fit_one(spec, None, ctx, here, fill=prompt + GEN // 2)
        est0 = fit_one(spec, None, ctx, plain, fill=prompt + GEN // 2)
        read = weights_read_per_token(plan_tensors(spec, None)[0])
        rows.append({"model": name, "ctx": ctx, "measured_tps": measured, "probe_at": at,
                     "estimate_tps": est0.decode_tps_estimate, "read": read,
                     "attention": attention_load(spec, ctx, est.kv_fill_tokens)})
        misses += not compare(name, ctx, est, peak[c], measured, [v for v, _ in tps[c]],
                              est0.decode_tps_estimate)
    print(f"targets: memory ±{MEM_TOL:.0%}, decode ±{SPEED_TOL:.0%}; {misses} outside")
    if on_rows and rows:
        on_rows(rows, plain)
    return misses


def main() -> int:
    files = candidates()
    print("probing this machine (bandwidth, compute, engine decode)…", flush=True)
    device = probe(engine=True)  # what `fit --device local --calibrate` gives a user
    print(f"bandwidth {device.bandwidth_gbps:.1f} GB/s, budget {device.model_budget_bytes / 2**30:.1f} GiB; "
          f"{PASSES} passes over {len(files) * len(CONTEXTS)} configurations, each pass in the "
          f"other order; decode = the faster pass's median", flush=True)
    configs = [(path, ctx, ctx // 2) for path in files for ctx in CONTEXTS]
    return 1 if check(configs, device) else 0


if __name__ == "__main__":
    sys.exit(main())
