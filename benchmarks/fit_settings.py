"""Fit's KV cache and compute buffer against llama.cpp's own allocation log, per runtime
setting (issue 34 item 2): SmolLM2-135M Q8_0 with the K/V cache types × flash attention, then
the batch sizes and a context off the 256 grid. Target: each within 5% of the log.

    python -m benchmarks fit_settings      (about 20 s)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

MIB = 2**20
TARGET = 0.05


def grid() -> list[dict]:
    rows = [{"n_ctx": 4096, "kv_type": k, "flash_attn": fa}
            for k in ("f16", "q8_0", "q4_0") for fa in (True, False)]
    for row in rows:  # llama.cpp refuses a quantized V without flash attention: K alone then
        if not row["flash_attn"] and row["kv_type"] != "f16":
            row["kv_type_v"] = "f16"
    return rows + [{"n_ctx": 3000, "kv_type": "q8_0", "kv_type_v": "q4_0", "flash_attn": True},
                   {"n_ctx": 8192, "flash_attn": False, "n_ubatch": 256},
                   {"n_ctx": 4096, "flash_attn": True, "n_batch": 128},
                   {"n_ctx": 2048, "flash_attn": True, "n_batch": 2048, "n_ubatch": 2048}]


def main() -> int:
    from llama_alloc_log import allocations, smollm2_q8_0

    from edgepick.devices.catalog import load_device
    from edgepick.fit.planner import fit_one
    from edgepick.models.gguf_info import gguf_spec

    path = smollm2_q8_0()
    spec = gguf_spec(path)
    dev = load_device("laptop-16gb-cpu")
    settings = grid()
    logged = allocations(path, settings)
    worst = 0.0
    print(f"{'settings':<58} {'KV fit/log MiB':>17} {'compute fit/log MiB':>21}")
    for s, log in zip(settings, logged):
        est = fit_one(spec, None, s["n_ctx"], dev, kv_type=s.get("kv_type", "f16"),
                      kv_type_v=s.get("kv_type_v"), flash_attn=s["flash_attn"],
                      n_batch=s.get("n_batch", 512), n_ubatch=s.get("n_ubatch", 512))
        kv, comp = est.kv_cache_bytes / MIB, est.compute_buffer_bytes / MIB
        lkv, lcomp = log["kv_mib"], log["compute_mib"]
        worst = max(worst, abs(kv / lkv - 1), abs(comp / lcomp - 1))
        name = " ".join(f"{k}={v}" for k, v in s.items())
        print(f"{name:<58} {kv:8.2f}/{lkv:<8.2f} {comp:10.2f}/{lcomp:<10.2f}")
    print(f"worst |fit/log - 1| = {worst:.1%} (target {TARGET:.0%})")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
