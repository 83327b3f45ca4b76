"""Memory the llama.cpp CPU runtime needs: weights, KV cache, compute and output buffers.

KV cache cells per layer follow llama.cpp (src/llama-kv-cache-iswa.cpp): a sliding-window layer
keeps pad256(min(n_ctx, n_swa + n_ubatch)) cells, a global layer n_ctx cells. Each cell holds
n_embd_k_gqa = head size K × KV heads of K and n_embd_v_gqa of V (src/llama-hparams.cpp).
Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2: `deepseek2` GGUFs with key_length_mla)
is stored as one KV "head" of kv_lora_rank + rope dims, and llama.cpp allocates no V cache at
all for it (src/llama-kv-cache.cpp: `has_v = !is_mla`): V is read from the latent in K.
"""

from __future__ import annotations

from typing import NamedTuple

from edgepick.models.quant_types import row_bytes
from edgepick.records.model import ModelSpec

KV_TYPE_NAMES = {"f32": "F32", "f16": "F16", "bf16": "BF16", "q8_0": "Q8_0", "q4_0": "Q4_0",
                 "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1"}


def _pad(x: int, n: int) -> int:
    return (x + n - 1) // n * n


def kv_cells(spec: ModelSpec, layer: int, n_ctx: int, n_ubatch: int = 512) -> int:
    if spec.sliding_window and layer in spec.swa_layers:
        return min(n_ctx, _pad(min(n_ctx, spec.sliding_window + n_ubatch), 256))
    return n_ctx


def kv_row_bytes(spec: ModelSpec, layer: int, kv_type: str) -> int:
    """Bytes of K plus V for one cell of one layer."""
    t = KV_TYPE_NAMES[kv_type]
    n_kv = _kv_heads(spec, layer)
    v = 0 if spec.kv_lora_rank else row_bytes(t, n_kv * spec.head_dim_v)
    return row_bytes(t, n_kv * spec.head_dim_k) + v


def kv_cache_bytes(spec: ModelSpec, n_ctx: int, kv_type: str = "f16", n_ubatch: int = 512) -> int:
    """2 × layers × ctx × KV heads × head size × bytes/element, per layer, SWA layers capped."""
    return sum(kv_cells(spec, i, n_ctx, n_ubatch) * kv_row_bytes(spec, i, kv_type)
               for i in range(spec.n_layers))


def kv_read_bytes(spec: ModelSpec, n_ctx: int, fill: int, kv_type: str = "f16",
               n_ubatch: int = 512) -> int:
    """KV bytes one decode step reads with `fill` tokens already in the cache."""
    return sum(min(fill, kv_cells(spec, i, n_ctx, n_ubatch)) * kv_row_bytes(spec, i, kv_type)
               for i in range(spec.n_layers))


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
