"""Memory the llama.cpp CPU runtime needs: weights, KV cache, compute and output buffers.

KV cache cells per layer follow llama.cpp: the context is padded to a multiple of 256
(src/llama-context.cpp: `cparams.n_ctx = GGML_PAD(cparams.n_ctx, 256)`) and a global layer keeps
that many cells; a sliding-window layer keeps pad256(min(n_ctx, n_swa + n_ubatch))
(src/llama-kv-cache-iswa.cpp, llama_kv_cache_iswa::llama_kv_cache_iswa), but only on the
architectures whose model really runs the window (data/llama_cpp_archs.json,
scripts/llama_archs.py: phi3 reads `sliding_window` and then sets LLAMA_SWA_TYPE_NONE). Each
cell holds n_embd_k_gqa = head size K × KV heads of K in the K type and n_embd_v_gqa of V in the
V type (`-ctk`/`-ctv` may differ; src/llama-kv-cache.cpp).
Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2: `deepseek2` GGUFs with key_length_mla)
is stored as one KV "head" of kv_lora_rank + rope dims, and llama.cpp allocates no V cache at
all for it (src/llama-kv-cache.cpp: `has_v = !is_mla`): V is read from the latent in K.
"""

from __future__ import annotations

import json

from functools import lru_cache
from importlib.resources import files
from typing import NamedTuple

from edgepick.fit.compute import pad_ctx
from edgepick.models.quant_types import row_bytes, type_sizes
from edgepick.records.model import ModelSpec

KV_TYPE_NAMES = {"f32": "F32", "f16": "F16", "bf16": "BF16", "q8_0": "Q8_0", "q4_0": "Q4_0",
                 "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1"}


@lru_cache(maxsize=1)
def swa_architectures() -> frozenset[str]:
    data = json.loads(files("edgepick").joinpath("data/llama_cpp_archs.json").read_text())
    return frozenset(data.get("sliding_window_architectures", []))


def runs_swa(spec: ModelSpec) -> bool:
    """Whether llama.cpp keeps a window-sized cache for this model. A config.json's window is
    already dropped by its reader when its architecture runs none (models/hf_config.py); a
    GGUF carries its llama.cpp architecture, checked here."""
    if not (spec.sliding_window and spec.swa_layers):
        return False
    return spec.source_kind != "gguf" or spec.architecture in swa_architectures()


def kv_cells(spec: ModelSpec, layer: int, n_ctx: int, n_ubatch: int = 512) -> int:
    n_ctx = pad_ctx(n_ctx)
    if layer in spec.swa_layers and runs_swa(spec):
        return min(n_ctx, pad_ctx(spec.sliding_window + n_ubatch))
    return n_ctx


UNQUANTIZED_KV = ("f32", "f16", "bf16")


def kv_types_problem(spec: ModelSpec, kv_type: str, kv_type_v: str | None,
                     flash_attn: bool) -> str | None:
    """Why llama.cpp would refuse these cache types, in one line; None when it takes them
    (src/llama-context.cpp, llama_init_from_model)."""
    v_type = kv_type_v or kv_type
    if spec.kv_lora_rank and v_type != kv_type:
        return (f"{spec.name}: llama.cpp takes one type for K and V of a latent (MLA) cache, "
                f"not K {kv_type} with V {v_type}")
    if v_type not in UNQUANTIZED_KV and not flash_attn:
        return (f"kv_type {v_type} for V needs flash attention: llama.cpp refuses a quantized V "
                "cache without it")
    if not flash_attn:
        return None
    for which, t, head in (("K", kv_type, spec.head_dim_k), ("V", v_type, spec.head_dim_v)):
        block = type_sizes(KV_TYPE_NAMES[t])[0]
        if t not in UNQUANTIZED_KV and head % block:
            return (f"{spec.name}: llama.cpp refuses a {which} cache of {t}: its block of {block} "
                    f"does not divide the head size {head}")
    return None


def kv_row_bytes(spec: ModelSpec, layer: int, kv_type: str, kv_type_v: str | None = None) -> int:
    """Bytes of K plus V for one cell of one layer (V in `kv_type_v`, by default K's type)."""
    n_kv = _kv_heads(spec, layer)
    v_type = KV_TYPE_NAMES[kv_type_v or kv_type]
    v = 0 if spec.kv_lora_rank else row_bytes(v_type, n_kv * spec.head_dim_v)
    return row_bytes(KV_TYPE_NAMES[kv_type], n_kv * spec.head_dim_k) + v


def kv_cache_bytes(spec: ModelSpec, n_ctx: int, kv_type: str = "f16", n_ubatch: int = 512,
                   kv_type_v: str | None = None) -> int:
    """2 × layers × ctx × KV heads × head size × bytes/element, per layer, SWA layers capped."""
    return sum(kv_cells(spec, i, n_ctx, n_ubatch) * kv_row_bytes(spec, i, kv_type, kv_type_v)
               for i in range(spec.n_layers))


def kv_read_bytes(spec: ModelSpec, n_ctx: int, fill: int, kv_type: str = "f16",
                  n_ubatch: int = 512, kv_type_v: str | None = None) -> int:
    """KV bytes one decode step reads with `fill` tokens already in the cache."""
    return sum(min(fill, kv_cells(spec, i, n_ctx, n_ubatch))
               * kv_row_bytes(spec, i, kv_type, kv_type_v) for i in range(spec.n_layers))


def _kv_heads(spec: ModelSpec, layer: int) -> int:
    return spec.n_kv_heads[layer] if layer < len(spec.n_kv_heads) else spec.n_kv_heads[-1]


class AttentionLoad(NamedTuple):
    """What one decode step's attention works through, summed over layers (a sliding-window
    layer attends to its whole window-sized cache)."""

    kv_position_heads: int  # cached positions × KV heads: K and V rows loaded
    query_position_heads: int  # cached positions × query heads: dot products and V sums
    head_dims: int  # K + V head size
    positions: int = 0  # cached positions summed over layers

    @property
    def kv_row_bytes(self) -> float:
        """F16 bytes of K and V per cached position and layer: how wide each position's rows
        are, which the engine probe finds the attention cost per head to depend on."""
        return 2.0 * self.head_dims * self.kv_position_heads / self.positions if self.positions else 0.0


def attention_load(spec: ModelSpec, n_ctx: int, fill: int, n_ubatch: int = 512) -> AttentionLoad:
    positions = [min(fill, kv_cells(spec, i, n_ctx, n_ubatch)) for i in range(spec.n_layers)]
    return AttentionLoad(
        kv_position_heads=sum(p * _kv_heads(spec, i) for i, p in enumerate(positions)),
        query_position_heads=sum(positions) * spec.n_heads,
        head_dims=spec.head_dim_k + (0 if spec.kv_lora_rank else spec.head_dim_v),
        positions=sum(positions))
