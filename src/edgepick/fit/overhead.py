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
  an interleaved layout while the mapped originals stay resident, so they count twice.
- activations of one prompt batch (n_ubatch tokens): about 4.6 bytes × (5 × n_head × head_size +
  3 × n_ff) per token; llama.cpp reserves far more compute buffer (a logits row per token), but
  only the rows a batch really uses are ever touched, so reserved-but-untouched memory is not
  counted, as the OS does not count it either.
"""

from __future__ import annotations

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


def n_ff(spec: ModelSpec) -> int:
    for t in spec.tensors:
        if t.name.endswith("ffn_up.weight") and len(t.shape) >= 2:
            return t.shape[1]
        if t.name.endswith("ffn_up_exps.weight") and len(t.shape) >= 2:
            return t.shape[1]
    return 4 * spec.n_embd


def repacked_tensors(tensors: list[PlannedTensor], cpu_features) -> list[PlannedTensor]:
    """The matmul weights llama.cpp's CPU backend copies into its interleaved layout on a CPU
    with `cpu_features` (ggml-cpu/repack.cpp: the type has a repacked form there and its rows
    interleave by the form's row count); the token embedding is only looked up, never repacked."""
    out = []
    for t in tensors:
        rows = repack_rows(t.type, cpu_features) if len(t.shape) >= 2 else None
        if rows and t.name != "token_embd.weight" and t.shape[1] % rows == 0:
            out.append(t)
    return out


def repacked_bytes(tensors: list[PlannedTensor], cpu_features) -> int:
    return sum(t.n_bytes for t in repacked_tensors(tensors, cpu_features))


def activation_bytes(spec: ModelSpec, n_ubatch: int) -> int:
    per_token = ACTIVATION_FACTOR * (5 * spec.n_heads * spec.head_dim_k + 3 * n_ff(spec))
    return int(n_ubatch * per_token)


def context_bytes(spec: ModelSpec) -> int:
    return CONTEXT_BASE_BYTES + spec.vocab_size * (BYTES_PER_VOCAB_ENTRY + 4)


def overhead_parts(spec: ModelSpec, tensors: list[PlannedTensor], n_ubatch: int,
                   cpu_features, runtime_bytes: int = RUNTIME_BASELINE_BYTES) -> dict[str, int]:
    return {
        "runtime": runtime_bytes,
        "context": context_bytes(spec),
        "activations": activation_bytes(spec, n_ubatch),
        "repacked_weights": repacked_bytes(tensors, cpu_features),
    }
