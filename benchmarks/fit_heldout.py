"""Fit planner on a shape no constant was fitted on: a synthetic 768-wide, 12-layer Llama with 12
heads and 4 KV heads (benchmarks/_synthetic.py), at Q5_K_M, Q6_K and Q4_K_M, ctx 2048 and 8192.

Same method as fit_accuracy.py (two passes, the faster counts) and the same targets: memory within
±10%, decode within ±20%. Keep this shape out of any recalibration so it stays a held-out check.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from benchmarks._synthetic import synthetic_llama
from benchmarks.fit_accuracy import GEN, MEM_TOL, PASSES, SPEED_TOL, decode_tps, measure
from edgepick.assets import bundled
from edgepick.devices.probe import probe
from edgepick.fit.planner import fit_one
from edgepick.models.gguf_info import gguf_spec
from edgepick.quantize.ladder import build_ladder


def main() -> int:
    src = synthetic_llama(n_embd=768, n_ff=2048, n_layers=12, n_head=12, n_head_kv=4)
    files = [f.path for f in build_ladder(str(src), ["Q5_K_M", "Q6_K", "Q4_K_M"],
                                          bundled.cache_dir() / "heldout")]
    device = probe()
    print(f"bandwidth {device.bandwidth_gbps:.1f} GB/s; {PASSES} passes, the faster counts", flush=True)
    misses = 0
    for path in files:
        spec = gguf_spec(path)
        for ctx in (2048, 8192):
            est = fit_one(spec, None, ctx, device, fill=ctx // 2 + GEN // 2)
            runs, peak = [], 0
            for _ in range(PASSES):
                out = measure(path, ctx, device.cores or 2)
                if not out.ok:
                    break
                runs.append(statistics.median(decode_tps(r) for r in out.value["runs"]))
                peak = max(peak, out.peak_rss_bytes)
            if not runs:
                print(f"{Path(path).name:40} {ctx:5} FAILED: {out.error}")
                misses += 1
                continue
            mem_r, tps_r = est.total_bytes / peak, est.decode_tps_estimate / max(runs)
            ok = abs(mem_r - 1) <= MEM_TOL and abs(tps_r - 1) <= SPEED_TOL
            misses += not ok
            print(f"{Path(path).name:40} {ctx:5} memory {est.total_bytes / 2**20:.0f}/"
                  f"{peak / 2**20:.0f} MiB ({mem_r:.2f})  decode {est.decode_tps_estimate:.1f}/"
                  f"{max(runs):.1f} tok/s ({tps_r:.2f}; passes "
                  f"{'/'.join(f'{x:.1f}' for x in runs)}){'' if ok else '  <-- outside target'}",
                  flush=True)
    print(f"targets: memory ±{MEM_TOL:.0%}, decode ±{SPEED_TOL:.0%}; {misses} outside")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
