"""Synthetic Llama-shaped GGUFs with random weights: model shapes the bundled files lack.

SmolLM2 (576 wide) and Gemma-3-270M (640 wide) have rows that are not multiples of 256, so
llama.cpp stores most of their "K-quant" tensors in fallback types; 7B-class models are
256-aligned and mostly Q4_K/Q6_K. Decode speed and memory do not depend on the weight values,
so random weights with SmolLM2's tokenizer make a fair stand-in for that shape. The benchmarks
measure the planner on them, and the engine probe (devices/engine_probe.py) times them.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

from edgepick.assets import bundled
from edgepick.models.gguf_rewrite import rewrite_gguf


def synthetic_llama(n_embd: int = 1024, n_ff: int = 4096, n_layers: int = 8, n_head: int = 16,
                    n_head_kv: int = 8) -> Path:
    """F16 file with SmolLM2's vocabulary (head size 64, like SmolLM2), built once and cached."""
    if n_embd != 64 * n_head:
        raise ValueError(f"width {n_embd} with {n_head} heads: the head size must stay 64")
    name = f"synthetic-llama-{n_embd}x{n_layers}-ff{n_ff}-h{n_head}-kv{n_head_kv}.F16.gguf"
    return bundled.derived(name, lambda dst: _build(dst, n_embd, n_ff, n_layers, n_head,
                                                     n_head_kv))


def _build(dst: Path, n_embd: int, n_ff: int, n_layers: int, n_head: int, n_head_kv: int) -> None:
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
    rewrite_gguf(
        src, dst, transform=transform,
        keep=lambda name: not name.startswith("blk.") or int(name.split(".")[1]) < n_layers,
        kv_overrides={"llama.embedding_length": (n_embd, u32),
                      "llama.feed_forward_length": (n_ff, u32),
                      "llama.block_count": (n_layers, u32),
                      "llama.attention.head_count": (n_head, u32),
                      "llama.attention.head_count_kv": (n_head_kv, u32)})


def quantized_pure(src: Path, ftype: str, threads: int = 2) -> Path:
    """`src` with every weight matrix in `ftype`'s base type (llama.cpp's --pure), quantized
    in-process through llama-cpp-python, so no llama.cpp tool build is needed. Cached."""
    import llama_cpp
    from llama_cpp._logger import set_verbose

    try:
        number = int(gguf.LlamaFileType[f"MOSTLY_{ftype}"])  # llama.cpp's llama_ftype
    except KeyError:
        raise ValueError(f"{ftype}: not a llama.cpp file type") from None

    def build(dst: Path) -> None:
        set_verbose(False)  # one log line per tensor otherwise
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype, params.pure, params.nthread = number, True, threads
        rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), params)
        if rc != 0:
            raise RuntimeError(f"{src}: llama_model_quantize to {ftype} failed ({rc})")

    return bundled.derived(src.name.replace(".F16.gguf", f".{ftype}-pure.gguf"), build)
