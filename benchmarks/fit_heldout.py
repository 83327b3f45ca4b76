"""Fit planner on a shape no constant was fitted on: a synthetic 768-wide, 12-layer Llama with 12
heads and 4 KV heads (src/edgepick/models/synthetic.py), at Q5_K_M, Q6_K and Q4_K_M, ctx 2048 and 8192.

Same method as fit_accuracy.py (two passes in opposite orders, the faster counts) and the same
targets: memory within ±10%, decode within ±20%. Keep this shape out of any recalibration so it
stays a held-out check.
"""

from __future__ import annotations

import sys

from edgepick.assets.synthetic import synthetic_llama
from benchmarks.fit_accuracy import PASSES, check
from edgepick.assets import bundled
from edgepick.devices.probe import probe
from edgepick.quantize.ladder import build_ladder

CONTEXTS = (2048, 8192)


def main() -> int:
    src = synthetic_llama(n_embd=768, n_ff=2048, n_layers=12, n_head=12, n_head_kv=4)
    files = [f.path for f in build_ladder(str(src), ["Q5_K_M", "Q6_K", "Q4_K_M"],
                                          bundled.cache_dir() / "heldout")]
    device = probe(engine=True)  # what `fit --device local --calibrate` gives a user
    print(f"bandwidth {device.bandwidth_gbps:.1f} GB/s; {PASSES} passes, the faster counts",
          flush=True)
    misses = check([(path, ctx, ctx // 2) for path in files for ctx in CONTEXTS], device)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
