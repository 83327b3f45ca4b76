"""A synthetic Llama-shaped GGUF with random weights: a model shape the bundled files lack.

SmolLM2 (576 wide) and Gemma-3-270M (640 wide) have rows that are not multiples of 256, so
llama.cpp stores most of their "K-quant" tensors in fallback types; 7B-class models are
256-aligned and mostly Q4_K/Q6_K. Decode speed and memory do not depend on the weight values,
so random weights with SmolLM2's tokenizer make a fair stand-in for that shape.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgepick.assets import bundled
from edgepick.models.gguf_rewrite import rewrite_gguf


def synthetic_llama(n_embd: int = 1024, n_ff: int = 4096, n_layers: int = 8, n_head: int = 16,
                    n_head_kv: int = 8) -> Path:
    """F16 file with SmolLM2's vocabulary (head size 64, like SmolLM2), built once and cached."""
    import gguf

    if n_embd != 64 * n_head:
        raise ValueError(f"width {n_embd} with {n_head} heads: the head size must stay 64")
    dst = bundled.cache_dir() / (f"synthetic-llama-{n_embd}x{n_layers}-ff{n_ff}-h{n_head}"
                                 f"-kv{n_head_kv}.F16.gguf")
    if dst.exists():
        return dst
    src = bundled.smollm2_f16()  # 576 wide, 1536 FFN, 9 heads of 64, 3 KV heads
    dims = {576: n_embd, 1536: n_ff, 192: n_head_kv * 64}
    rng = np.random.default_rng(0)

    def transform(t):
        shape = tuple(dims.get(d, d) for d in t.data.shape)
        if len(shape) == 1:
            return np.ones(shape, dtype=np.float32), gguf.GGMLQuantizationType.F32
        data = (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)
        return data, gguf.GGMLQuantizationType.F16

    u32 = gguf.GGUFValueType.UINT32
    return rewrite_gguf(
        src, dst, transform=transform,
        keep=lambda name: not name.startswith("blk.") or int(name.split(".")[1]) < n_layers,
        kv_overrides={"llama.embedding_length": (n_embd, u32),
                      "llama.feed_forward_length": (n_ff, u32),
                      "llama.block_count": (n_layers, u32),
                      "llama.attention.head_count": (n_head, u32),
                      "llama.attention.head_count_kv": (n_head_kv, u32)})
