"""Fit planner vs measurement: predicted and measured peak memory and decode tok/s.

Builds a few quant types of the bundled SmolLM2-135M and Gemma-3-270M with llama.cpp's quantizer,
then for two context sizes measures each in its own worker process (peak RSS, decode tok/s at the
KV fill the planner assumes: half the context) and prints the ratios. Targets (issue 2): memory
within ±10%, decode within ±20%. The machine is probed in the same run, so both sides see the
same conditions.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from edgepick.assets import bundled
from edgepick.bench.measure import measure_point
from edgepick.bench.worker import run_isolated
from edgepick.devices.probe import probe
from edgepick.fit.planner import fit_one
from edgepick.models.gguf_info import gguf_spec
from edgepick.quantize.ladder import build_ladder
from edgepick.records import Candidate, RuntimeSettings

CONTEXTS = (2048, 8192)
GEN = 64
MEM_TOL, SPEED_TOL = 0.10, 0.20


def candidates() -> list[str]:
    out_dir = bundled.cache_dir() / "fit_accuracy"
    smol = [f.path for f in build_ladder(str(bundled.smollm2_f16()), ["Q8_0", "Q4_0", "Q4_K_M"],
                                         out_dir)]
    gemma = [f.path for f in build_ladder(str(bundled.gemma3_270m_f16()), ["Q8_0", "Q4_0"], out_dir)]
    return [str(bundled.smollm2_f16()), *smol, str(bundled.gemma3_270m_q4_k_m()), *gemma]


def decode_tps(run: dict) -> float:
    times = run["requests"][0]["token_times"]
    return (len(times) - 1) / (times[-1] - times[0])


def main() -> int:
    files = candidates()
    print("probing this machine (bandwidth, compute)…", flush=True)
    device = probe()
    print(f"bandwidth {device.bandwidth_gbps:.1f} GB/s, budget {device.model_budget_bytes / 2**30:.1f} GiB")
    header = (f"{'model':42} {'ctx':>5} {'mem pred':>9} {'mem meas':>9} {'ratio':>6} "
              f"{'tok/s pred':>10} {'tok/s meas':>10} {'ratio':>6}")
    print(header)
    misses = 0
    for path in files:
        spec = gguf_spec(path)
        for ctx in CONTEXTS:
            prompt = ctx // 2
            est = fit_one(spec, None, ctx, device, fill=prompt + GEN // 2)
            cand = Candidate(model=path, settings=RuntimeSettings(n_ctx=ctx, threads=device.cores or 2))
            out = run_isolated(measure_point, cand.model_dump(),
                               {"prompt_tokens": prompt, "gen_tokens": GEN, "warmup": 1, "repeats": 3})
            if not out.ok:
                print(f"{Path(path).name:42} {ctx:>5} FAILED: {out.error}")
                misses += 1
                continue
            tps = statistics.median(decode_tps(r) for r in out.value["runs"])
            mem_r = est.total_bytes / out.peak_rss_bytes
            tps_r = est.decode_tps_estimate / tps
            ok = abs(mem_r - 1) <= MEM_TOL and abs(tps_r - 1) <= SPEED_TOL
            misses += not ok
            print(f"{Path(path).name:42} {ctx:>5} {est.total_bytes / 2**20:8.0f}M "
                  f"{out.peak_rss_bytes / 2**20:8.0f}M {mem_r:6.2f} {est.decode_tps_estimate:10.1f} "
                  f"{tps:10.1f} {tps_r:6.2f}{'' if ok else '  <-- outside target'}", flush=True)
    print(f"targets: memory ±{MEM_TOL:.0%}, decode ±{SPEED_TOL:.0%}; {misses} outside")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
