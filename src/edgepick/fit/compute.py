"""llama.cpp's compute buffer: what `sched_reserve` allocates for the worst-case prompt graph,
per runtime setting (flash attention, n_batch, n_ubatch, the context).

The pinned llama.cpp (src/llama-context.cpp):
- `llama_context::llama_context`: n_batch = min(n_ctx, n_batch) for causal models, n_ubatch =
  min(n_batch, n_ubatch), then n_ctx = GGML_PAD(n_ctx, 256);
- `llama_context::sched_reserve`: reserves the prompt graph of n_tokens = min(n_ctx, n_ubatch)
  tokens, every one an output (n_outputs = min(n_tokens, n_outputs_max = n_batch)), with the
  full cache in view (n_kv = the cache's cells), and sizes one CPU buffer for it
  (`CPU compute buffer size` in its log).

ggml-alloc frees a tensor after its last use, so the buffer is the most that is alive at one
point of the graph. Three points compete (4 bytes an element: activations are F32):
- the output: logits [n_vocab, n_outputs] plus two rows of n_embd per output (the last layer's
  selected rows and their norm) — `llm_graph_context::build_inp_out_ids` / the LM head;
- the feed-forward of a layer: gate, up and the gated product [n_ff, n_tokens] alive together,
  plus four n_embd rows (residual, norm, input, output); a mixture of experts computes
  [n_ff_exp, n_expert_used, n_tokens] for each (`llm_graph_context::build_moe_ffn`), so its
  width is n_ff_exp × n_expert_used;
- attention without flash attention: the scores [n_kv, n_tokens, n_head]
  (`llm_graph_context::build_attn_mha`: `ggml_mul_mat(k, q)` then an in-place soft_max) plus
  five n_embd rows and K and V of the batch. Flash attention never forms the scores
  (`ggml_flash_attn_ext`).
The KQ mask [n_kv, n_tokens] (F32 without flash attention, F16 with it; one per cache kind on
sliding-window models) is an input every layer reads, alive until the last layer's attention,
so it adds to the feed-forward and attention points. Checked against llama.cpp's log on
SmolLM2, Gemma-3 and synthetic dense, MoE and long-context shapes (tests/fit/test_fit_settings.py).
"""

from __future__ import annotations

from typing import NamedTuple

from edgepick.records.model import ModelSpec

F32 = 4


def pad_ctx(n_ctx: int) -> int:
    """The context llama.cpp allocates: GGML_PAD(n_ctx, 256) (llama-context.cpp)."""
    return (n_ctx + 255) // 256 * 256


class Batches(NamedTuple):
    n_ctx: int  # padded
    n_batch: int
    n_ubatch: int


def batches(n_ctx: int, n_batch: int = 512, n_ubatch: int = 512) -> Batches:
    """The sizes llama.cpp really uses: the logical batch cut to the (unpadded) context, the
    micro-batch to the logical batch (llama_context::llama_context)."""
    b = min(n_ctx, n_batch)
    return Batches(pad_ctx(n_ctx), b, min(b, n_ubatch))


def ffn_width(spec: ModelSpec) -> int:
    """Widest feed-forward a token goes through in one layer: a dense layer's n_ff, an MoE
    layer's n_ff_exp × n_expert_used, or its shared expert's, whichever is widest."""
    dense = moe = 0
    for t in spec.tensors:
        if len(t.shape) < 2:
            continue
        if t.name.endswith("ffn_up_exps.weight"):
            moe = max(moe, t.shape[1] * max(1, spec.n_experts_used))
        elif t.name.endswith(("ffn_up.weight", "ffn_up_shexp.weight")):
            dense = max(dense, t.shape[1])
    return max(dense, moe) or 4 * spec.n_embd


def _kv_width(spec: ModelSpec) -> int:
    heads = max(spec.n_kv_heads or [spec.n_heads])
    return heads * (spec.head_dim_k + (0 if spec.kv_lora_rank else spec.head_dim_v))


def mask_bytes(cells: list[int], n_tokens: int, flash_attn: bool) -> int:
    """The KQ masks: one per distinct cache size (global and sliding-window layers)."""
    return sum(c * n_tokens for c in set(cells)) * (2 if flash_attn else F32)


def compute_buffer_bytes(spec: ModelSpec, cells: list[int], n_tokens: int, n_outputs: int,
                         flash_attn: bool) -> int:
    """The most alive at one point of a prompt graph of `n_tokens` tokens with `n_outputs`
    logits rows, each layer's cache holding `cells[layer]` cells."""
    e = spec.n_embd
    masks = mask_bytes(cells, n_tokens, flash_attn)
    output = F32 * n_outputs * (spec.vocab_size + 2 * e)
    ffn = masks + F32 * n_tokens * (3 * ffn_width(spec) + 4 * e)
    attn = masks + F32 * n_tokens * (5 * e + 2 * _kv_width(spec))
    if not flash_attn:
        attn += F32 * n_tokens * spec.n_heads * max(cells or [0])
    return max(output, ffn, attn)


def reserved_compute_bytes(spec: ModelSpec, cells: list[int], b: Batches,
                           flash_attn: bool) -> int:
    """`CPU compute buffer size` as llama.cpp logs it: the prompt graph of a full micro-batch,
    every token an output (llama_context::sched_reserve)."""
    n_tokens = min(b.n_ctx, b.n_ubatch)
    return compute_buffer_bytes(spec, cells, n_tokens, min(n_tokens, b.n_batch), flash_attn)
