"""Decode speed against the attention shape: how the estimate follows KV heads, query heads and
depth as the cache fills.

Synthetic F16 Llama shapes (src/edgepick/models/synthetic.py, heads of 64) with 1-16 KV heads, 4-16
query heads and 4-24 layers, each measured at a short fill and a long one in a context of 8192,
plus SmolLM2 and Gemma-3 (one KV head of 256). The attention terms of src/edgepick/fit/speed.py
were fitted on these shapes (`python -m research.calibrate` on the rows it saves); fit_heldout
is the check on a shape they were not fitted on. Same method and targets as fit_accuracy, with
the engine probe beside every measurement (research/conditions.py).

    python -m research.attention_shapes
"""

from __future__ import annotations

import sys

from benchmarks.fit_accuracy import PASSES, check
from edgepick.assets import bundled
from edgepick.devices.probe import probe
from edgepick.assets.synthetic import synthetic_llama
from research.fit_rows import saver

CTX = 8192
PROMPTS = (16, 4096)
# (width, FFN, layers, query heads, KV heads): GQA groups of 1, 2, 4 and 16, MHA and MQA
SHAPES = [(256, 768, 4, 4, 1), (256, 768, 4, 4, 4), (256, 768, 24, 4, 2), (512, 768, 4, 8, 2),
          (512, 768, 4, 8, 8), (1024, 768, 4, 16, 1), (1024, 768, 4, 16, 4),
          (1024, 768, 4, 16, 16), (1024, 4096, 8, 16, 8)]


def main() -> int:
    files = [str(synthetic_llama(*shape)) for shape in SHAPES]
    files += [str(bundled.smollm2_f16()), str(bundled.gemma3_270m_f16())]
    device = probe(engine=False)  # the engine probe runs beside each measurement
    print(f"bandwidth {device.bandwidth_gbps:.1f} GB/s; {len(files)} models at fills "
          f"{' and '.join(map(str, PROMPTS))}, ctx {CTX}; {PASSES} passes, the faster counts",
          flush=True)
    configs = [(path, CTX, prompt) for path in files for prompt in PROMPTS]
    on_rows, conditions = saver(bundled.cache_dir() / "attention_shapes_rows.json")
    misses = check(configs, device, conditions, on_rows)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
