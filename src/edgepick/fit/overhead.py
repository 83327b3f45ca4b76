"""Runtime memory beyond weights and KV cache, calibrated on llama.cpp's CPU backend.

Measured on this project's worker (python -m edgepick, llama-cpp-python 0.3.36) with SmolLM2-135M
and Gemma-3-270M at several quant types and context sizes (benchmarks/fit_accuracy.py re-checks
it): resident memory after load = runtime baseline + mapped weights + repacked weights + KV cache +
context structures, and a full prompt batch adds its activations. The pieces:

- runtime baseline: the Python interpreter with llama-cpp-python imported, ~52 MiB. A native app
  embedding llama.cpp needs less; pass `runtime_bytes` to plan for it.
- context structures: ~17 MiB plus ~122 bytes per vocabulary entry (token texts and maps), plus
  the output logits buffer (n_vocab × 4 bytes).
- repacked weights: on AVX2/NEON CPUs llama.cpp copies some types' matmul weights (Q4_0, Q4_K and
  IQ4_NL on AVX2; QUANT_FACTS says which where) into
  an interleaved layout while the mapped originals stay resident, so they count twice. A tied
  embedding is both: the lookup keeps the original (GET_ROWS has no repacked kernel, so
  token_embd stays in the CPU buffer), and the LM head, created as a TENSOR_DUPLICATED copy of
  token_embd with the output's buffer types (llama-model.cpp, `create_tensor` for
  LLM_TENSOR_OUTPUT; ggml-cpu/repack.cpp's extra buffer type), gets a repacked copy.
- activations of one prompt batch (n_ubatch tokens): about 4.6 bytes × (5 × n_head × head_size +
  3 × the FFN width) per token, the FFN width of a mixture of experts being n_ff_exp × the
  experts each token uses (llm_graph_context::build_moe_ffn computes [n_ff_exp, n_expert_used,
  n_tokens]). Without flash attention a prompt at full context also writes the scores
  [n_ctx, n_ubatch, n_head] in F32. llama.cpp reserves more compute buffer (a logits row per
  token; fit/compute.py models the reservation and reports it beside the need), but only what
  a batch really uses is ever touched, so reserved-but-untouched memory is not counted, as the
  OS does not count it either.
"""

from __future__ import annotations

from edgepick.fit.compute import ffn_width
from edgepick.models.quant_types import PlannedTensor, repack_rows
from edgepick.records.model import ModelSpec

MIB = 1024 * 1024
RUNTIME_BASELINE_BYTES = 52 * MIB
# of which file-backed: the interpreter's, numpy's and libllama's code pages (RssFile of a
# use_mmap=False run, where no weight is mapped; benchmarks/memory_need.py)
RUNTIME_FILE_BYTES = 34 * MIB
CONTEXT_BASE_BYTES = 17 * MIB
BYTES_PER_VOCAB_ENTRY = 122
ACTIVATION_FACTOR = 4.6


def repacked_tensors(tensors: list[PlannedTensor], cpu_features) -> list[PlannedTensor]:
    """The matmul weights llama.cpp's CPU backend copies into its interleaved layout on a CPU
    with `cpu_features` (ggml-cpu/repack.cpp: the type has a repacked form there and its rows
    interleave by the form's row count). The token embedding is only looked up, never repacked,
    unless it is tied to the output: then the LM head is a repacked copy of it."""
    tied = "output.weight" not in {t.name for t in tensors}
    out = []
    for t in tensors:
        rows = repack_rows(t.type, cpu_features) if len(t.shape) >= 2 else None
        if rows and t.shape[1] % rows == 0 and (t.name != "token_embd.weight" or tied):
            out.append(t)
    return out


def duplicated_bytes(tensors: list[PlannedTensor], cpu_features) -> int:
    """Bytes held twice whether the file is mapped or read: a tied embedding's repacked copy
    beside the original its lookups read."""
    return sum(t.n_bytes for t in repacked_tensors(tensors, cpu_features)
               if t.name == "token_embd.weight")


def repacked_bytes(tensors: list[PlannedTensor], cpu_features) -> int:
    return sum(t.n_bytes for t in repacked_tensors(tensors, cpu_features))


def activation_bytes(spec: ModelSpec, n_ubatch: int, scores: int = 0) -> int:
    """Touched by one prompt micro-batch; `scores`: the attention scores it writes without
    flash attention (planner: F32 × n_ubatch × n_head × cells)."""
    per_token = ACTIVATION_FACTOR * (5 * spec.n_heads * spec.head_dim_k + 3 * ffn_width(spec))
    return int(n_ubatch * per_token) + scores


def context_bytes(spec: ModelSpec) -> int:
    return CONTEXT_BASE_BYTES + spec.vocab_size * (BYTES_PER_VOCAB_ENTRY + 4)


def overhead_parts(spec: ModelSpec, tensors: list[PlannedTensor], n_ubatch: int,
                   cpu_features, runtime_bytes: int = RUNTIME_BASELINE_BYTES,
                   scores: int = 0) -> dict[str, int]:
    return {
        "runtime": runtime_bytes,
        "context": context_bytes(spec),
        "activations": activation_bytes(spec, n_ubatch, scores),
        "repacked_weights": repacked_bytes(tensors, cpu_features),
    }
