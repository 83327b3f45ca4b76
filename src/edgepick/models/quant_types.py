"""llama.cpp's quantization types: sizes, file types, and which type each tensor gets.

Sizes come from the `gguf` package's own table (block size and bytes per block, scales
included); everything else edgepick knows about a type is in QUANT_FACTS below, one row per
type, as gguf-py's constants.py keeps its own. `planned_tensor_types` follows llama.cpp's `llama_tensor_get_type` (src/llama-quant.cpp
of the pinned llama.cpp) for the file types people actually build, so that a size can be
predicted exactly for a model that has not been quantized yet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import gguf

from edgepick.errors import EdgepickError

# File type (what `llama-quantize` is asked for) -> the ggml type most tensors get.
FTYPE_BASE = {
    "F32": "F32", "F16": "F16", "BF16": "BF16", "Q8_0": "Q8_0",
    "Q6_K": "Q6_K", "Q5_K_M": "Q5_K", "Q5_K_S": "Q5_K", "Q5_1": "Q5_1", "Q5_0": "Q5_0",
    "Q4_K_M": "Q4_K", "Q4_K_S": "Q4_K", "Q4_1": "Q4_1", "Q4_0": "Q4_0",
    "IQ4_NL": "IQ4_NL", "IQ4_XS": "IQ4_XS",
    "Q3_K_L": "Q3_K", "Q3_K_M": "Q3_K", "Q3_K_S": "Q3_K", "Q2_K": "Q2_K",
}


@dataclass(frozen=True)
class QuantFacts:
    """What edgepick knows about one ggml type beyond its size.

    fallback: the type llama-quantize uses when a row is not a multiple of the block
        (llama-quant.cpp tensor_type_fallback).
    repack: the CPU features on which llama.cpp's CPU backend copies the type's matmul weights
        into an interleaved layout at load, each with the row count the rows must divide by
        (ggml-cpu/repack.cpp, ggml_repack_get_optimal_repack_type: the first that the CPU has
        wins); the mapped original is then never read again.
    avx2_efficiency: weight streaming speed relative to the probed bandwidth, 2 threads, x86-64
        AVX2, llama.cpp 0.3.36 CPU kernels. Least-squares fit (research/calibrate.py), first over
        69 decode measurements (SmolLM2 and Gemma-3 files at fills 32-4128; synthetic 256-aligned
        Llama shapes quantized --pure to each type), then refitted with fit/speed.py's attention
        terms over 78 more. Below 1 where the dot-product kernels, not memory, set the pace
        (K-quants with 3 bits unpack slowest). BF16 and F32 were not measured (a guess); IQ4_NL
        takes IQ4_XS's value. None: never measured (the seeds' 0.65 applies).
    edge_support: how widely edge engines run the type (llama.cpp CPU/Metal/Vulkan, MLC, vendor
        NPUs; seed 000 §2.5: check operator coverage), for decide's engineering layer: plain
        8/4-bit block types and F16 run everywhere, K-quants on llama.cpp's backends but rarely
        elsewhere, i-quants and 2-3 bit types have the fewest kernels.
    """

    fallback: str | None = None
    repack: tuple[tuple[str, int], ...] = ()
    avx2_efficiency: float | None = None
    edge_support: float = 0.6


QUANT_FACTS: dict[str, QuantFacts] = {
    "F32": QuantFacts(avx2_efficiency=0.7, edge_support=1.0),
    "F16": QuantFacts(avx2_efficiency=0.88, edge_support=1.0),
    "BF16": QuantFacts(avx2_efficiency=0.6, edge_support=0.9),
    "Q8_0": QuantFacts(repack=(("i8mm", 4), ("dotprod", 4)), avx2_efficiency=0.83,
                       edge_support=1.0),
    "Q6_K": QuantFacts(fallback="Q8_0", repack=(("i8mm", 8), ("dotprod", 8)),
                       avx2_efficiency=0.66, edge_support=0.8),
    "Q5_K": QuantFacts(fallback="Q5_1", repack=(("i8mm", 8), ("dotprod", 8)),
                       avx2_efficiency=0.64, edge_support=0.8),
    "Q5_1": QuantFacts(avx2_efficiency=0.63, edge_support=0.9),
    "Q5_0": QuantFacts(avx2_efficiency=0.55, edge_support=0.9),
    "Q4_K": QuantFacts(fallback="Q5_0", repack=(("avx2", 8), ("i8mm", 8), ("dotprod", 8)),
                       avx2_efficiency=0.60, edge_support=0.8),
    "Q4_1": QuantFacts(avx2_efficiency=0.63, edge_support=0.9),
    "Q4_0": QuantFacts(repack=(("avx2", 8), ("i8mm", 4), ("dotprod", 4)), avx2_efficiency=0.69,
                       edge_support=1.0),
    "Q3_K": QuantFacts(fallback="Q4_0", avx2_efficiency=0.40, edge_support=0.6),
    "Q2_K": QuantFacts(fallback="Q4_0", repack=(("avx512f", 8),), avx2_efficiency=0.56,
                       edge_support=0.6),
    "IQ4_NL": QuantFacts(repack=(("avx2", 8), ("dotprod", 4)), avx2_efficiency=0.54,
                         edge_support=0.6),
    "IQ4_XS": QuantFacts(fallback="IQ4_NL", avx2_efficiency=0.54, edge_support=0.6),
}
_FALLBACK = {t: f.fallback for t, f in QUANT_FACTS.items() if f.fallback}


def facts(ggml_type: str) -> QuantFacts | None:
    return QUANT_FACTS.get(ggml_type.upper())


_FEATURE_ALIASES = {"asimddp": "dotprod"}  # /proc/cpuinfo's name for Arm's dot product


def repack_rows(ggml_type: str, cpu_features) -> int | None:
    """The row multiple llama.cpp's CPU backend repacks `ggml_type` with on a CPU with
    `cpu_features`; None when it does not repack it there."""
    have = {_FEATURE_ALIASES.get(f, f) for f in cpu_features}
    row = QUANT_FACTS.get(ggml_type)
    for feature, rows in row.repack if row else ():
        if feature in have:
            return rows
    return None
# gguf's LlamaFileType member names for general.file_type values
_FTYPE_ALIASES = {"ALL_F32": "F32", "MOSTLY_F16": "F16", "MOSTLY_BF16": "BF16"}


def type_sizes(ggml_type: str) -> tuple[int, int]:
    """(elements per block, bytes per block) of a ggml type."""
    try:
        qt = gguf.GGMLQuantizationType[ggml_type.upper()]
    except KeyError:
        raise EdgepickError(f"unknown ggml type '{ggml_type}'") from None
    return gguf.GGML_QUANT_SIZES[qt]


def bits_per_weight(ggml_type: str) -> float:
    block, size = type_sizes(ggml_type)
    return 8.0 * size / block


def row_bytes(ggml_type: str, n_cols: int) -> int:
    block, size = type_sizes(ggml_type)
    return (n_cols // block) * size


def normalize_ftype(name: str) -> str:
    key = name.strip().upper().replace("-", "_")
    if key.startswith("MOSTLY_"):
        key = key[len("MOSTLY_"):]
    key = _FTYPE_ALIASES.get(key, key)
    if key not in FTYPE_BASE:
        raise EdgepickError(f"unknown quantization type '{name}'; known: {', '.join(FTYPE_BASE)}")
    return key


def ftype_name_from_gguf(value: int) -> str | None:
    try:
        name = gguf.LlamaFileType(value).name
    except ValueError:
        return None
    name = _FTYPE_ALIASES.get(name, name.removeprefix("MOSTLY_"))
    return name


@dataclass
class PlannedTensor:
    name: str
    shape: list[int]  # GGUF order: shape[0] is the row length
    type: str
    n_bytes: int
    fell_back_from: str | None = None
    share: float = 1.0  # of its elements one decode step reads (routed experts: k of n)


def _quantizable(name: str, shape: list[int]) -> bool:
    return len(shape) >= 2 and name.endswith(".weight") and "norm" not in name \
        and not name.startswith("position_embd") and "rope_freqs" not in name


def _use_more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def planned_tensor_types(tensors: list[tuple[str, list[int], str]], ftype: str,
                         n_gqa: int = 1, n_expert: int = 0) -> list[PlannedTensor]:
    """Which ggml type llama.cpp gives each tensor when asked for `ftype`.

    `tensors` holds (name, GGUF shape, current type); non-quantizable tensors keep their type.
    `n_expert`: routed experts per MoE layer (0 for a dense model).
    """
    ftype = normalize_ftype(ftype)
    base = FTYPE_BASE[ftype]
    quantized = base not in ("F32", "F16", "BF16")
    names = {t[0] for t in tensors}
    tied = "output.weight" not in names
    n_v = sum(1 for t in tensors if _ATTN_V.search(t[0]))
    n_down = sum(1 for t in tensors if _FFN_DOWN.search(t[0]))
    if n_expert > 1:
        # llama.cpp takes an MoE model's FFN layer from the tensor's name, out of n_layer
        n_down = 1 + max((_block_index(t[0]) for t in tensors), default=0)
    i_v = i_down = 0
    by_name: dict[str, PlannedTensor] = {}
    # llama.cpp visits tensors in block order (not file order); the per-layer counters of the
    # mixture rules depend on it.
    for name, shape, current in sorted(tensors, key=lambda t: _block_index(t[0])):
        if not _quantizable(name, shape) or "ffn_gate_inp" in name:  # routers stay as they are
            by_name[name] = PlannedTensor(name, shape, current, _nbytes(current, shape))
            continue
        new = base
        if quantized:
            if n_expert > 1 and _FFN_DOWN.search(name):
                i_down = _block_index(name)
            new, i_v, i_down = _mixture_rule(name, shape, ftype, base, tied, n_gqa,
                                             i_v, n_v, i_down, n_down, n_expert)
            fell = None
            block = type_sizes(new)[0]
            if shape[0] % block:
                fell = new
                new = _FALLBACK.get(new, new)
                if shape[0] % type_sizes(new)[0]:
                    new = "F16"
            by_name[name] = PlannedTensor(name, shape, new, _nbytes(new, shape), fell)
        else:
            by_name[name] = PlannedTensor(name, shape, new, _nbytes(new, shape))
    return [by_name[t[0]] for t in tensors]


# llama-quant.cpp's tensor categories: the attention-V-like tensors share one counter and one
# rule (V, fused QKV, MLA's kv_b), and every FFN down tensor (dense, routed or shared experts)
# counts as ffn_down
_ATTN_V = re.compile(r"(attn_v|attn_qkv|attn_kv_b)\.weight$")
_FFN_DOWN = re.compile(r"ffn_down[a-z_]*\.weight$")


def _block_index(name: str) -> int:
    m = re.match(r"blk\.(\d+)\.", name)
    return int(m.group(1)) if m else -1


def _mixture_rule(name: str, shape: list[int], ftype: str, base: str, tied: bool, n_gqa: int,
                  i_v: int, n_v: int, i_down: int, n_down: int,
                  n_expert: int = 0) -> tuple[str, int, int]:
    new = base
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        if shape[0] % type_sizes(base)[0]:
            new = "Q8_0"
        elif base != "Q8_0":
            new = "Q6_K"
        return new, i_v, i_down
    if name == "token_embd.weight":
        return new, i_v, i_down
    if _ATTN_V.search(name):
        if ftype == "Q2_K":
            new = "Q4_K" if n_gqa >= 4 else "Q3_K"
        elif ftype == "Q3_K_M":
            new = "Q5_K" if i_v < 2 else "Q4_K"
        elif ftype == "Q3_K_L":
            new = "Q5_K"
        elif ftype in ("IQ4_NL", "IQ4_XS") and n_gqa >= 4:
            new = "Q5_K"
        elif ftype in ("Q4_K_M", "Q5_K_M") and _use_more_bits(i_v, n_v):
            new = "Q6_K"
        elif ftype == "Q4_K_S" and i_v < 4:
            new = "Q5_K"
        if n_expert == 8:  # llama.cpp: "for the 8-expert model, bumping this to Q8_0 trades ~128MB"
            new = "Q8_0"
        return new, i_v + 1, i_down
    if name.endswith("attn_k.weight") and n_expert == 8:
        return "Q8_0", i_v, i_down
    if _FFN_DOWN.search(name):
        i, n = i_down, n_down
        if ftype == "Q2_K":
            new = "Q3_K"
        elif ftype == "Q3_K_M":
            new = "Q5_K" if i < n // 16 else "Q4_K"
        elif ftype == "Q3_K_L":
            new = "Q5_K"
        elif ftype in ("Q4_K_M", "Q5_K_M") and _use_more_bits(i, n):
            new = "Q6_K"
        elif ftype in ("IQ4_NL", "IQ4_XS") and i < n // 8:
            new = "Q5_K"
        elif ftype == "Q4_K_S" and i < n // 8:
            new = "Q5_K"
        return new, i_v, i_down + 1
    if name.endswith("attn_output.weight"):
        if n_expert == 8:
            new = "Q5_K" if ftype in ("Q2_K", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M") \
                else base
        else:
            new = {"Q2_K": "Q3_K", "Q3_K_M": "Q4_K", "Q3_K_L": "Q5_K"}.get(ftype, base)
    return new, i_v, i_down


def _nbytes(ggml_type: str, shape: list[int]) -> int:
    rows = 1
    for d in shape[1:]:
        rows *= d
    return row_bytes(ggml_type, shape[0]) * rows
