"""What removing blocks does to a GGUF's metadata, read from how the pinned llama.cpp loads it
(src/llama-model.cpp `load_hparams`, src/llama-hparams.cpp, src/models/*.cpp).

A block is `blk.N.*`; the blocks kept are renumbered from 0 in their order. Metadata that
describes the blocks one entry each is sliced to the kept blocks; a layout llama.cpp derives from
the layer index (Gemma-3's "every 6th layer is global") is written out as the explicit per-layer
array llama.cpp reads first, so the kept layers keep the attention they had. A model whose depth
is tied to something else (a shared or recurrent state, layers that reuse another layer's cache,
a layout derived from the index that llama.cpp cannot be told explicitly) is refused with the
reason; nothing is guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import gguf

from edgepick.errors import EdgepickError

BLOCK = re.compile(r"^blk\.(\d+)\.")

# Per-layer keys llama.cpp reads with get_key_or_arr / get_arr over the layers (suffix after
# "<arch>."): as an array they hold one entry per block and are sliced; as a scalar they apply to
# every block and stay as they are.
PER_LAYER = {
    "feed_forward_length", "attention.head_count", "attention.head_count_kv",
    "expert_used_count", "expert_feed_forward_length", "attention.sliding_window_pattern",
    "attention.rope_pattern", "swiglu_clamp_exp", "swiglu_clamp_shexp", "xielu_alpha_n",
    "xielu_alpha_p", "xielu_beta", "xielu_eps", "attention.indexer_types",
    "attention.compress_ratios",
}
# Arrays of a fixed length that is not the depth (a 4-block model would otherwise be sliced).
NOT_PER_LAYER = {"rope.dimension_sections", "classifier.output_labels"}

# llama_model_base::load_swa_pattern(ml, n, dense_first) callers: without the array in the file,
# layer il is sliding-window when il % n < n - 1 (dense_first: when il % n != 0). They read the
# array `<arch>.attention.sliding_window_pattern` first, so the pruned layout can be written out.
SWA_DEFAULTS = {
    "gemma2": (2, False), "gemma3": (6, False), "gemma-embedding": (6, False),
    "cohere2": (4, False), "cohere2moe": (4, True), "exaone4": (4, False),
    "exaone-moe": (4, False), "olmo2": (4, False), "gpt-oss": (2, False),
    "plamo3": (8, False), "mellum": (4, False), "muse-glimmer": (4, False),
    "laguna": (4, True), "modern-bert": (3, True),
}

# Layouts the pinned llama.cpp derives from the layer index with no key to state them per layer.
INDEX_DERIVED = {
    "smollm3": "every 4th layer skips RoPE, counted from the layer index (src/models/smollm3.cpp)",
    "llama4": "its MoE and no-RoPE layers are every n-th layer by index (src/models/llama4.cpp)",
    "afmoe": "its no-RoPE layers are every n-th layer by index (src/models/afmoe.cpp)",
    "ernie4_5-moe": "its MoE layers are every n-th layer by index (src/models/ernie4-5-moe.cpp)",
    "nanbeige": "its layers are grouped by index (src/models/nanbeige.cpp)",
    "kimi-k3": "its attention residuals are grouped by layer index (src/models/kimi-k3.cpp)",
}

# Keys whose presence ties the model's depth to something the file does not describe per block.
_REFUSE_KEYS = {
    "nextn_predict_layers": "its last {v} blocks are next-token-prediction heads, not the stack",
    "attention.shared_kv_layers": "its last {v} layers reuse earlier layers' KV cache",
    "attention.recurrent_layers": "it mixes recurrent and attention layers (a recurrent state)",
    "full_attention_interval": "it mixes linear and full attention layers by interval",
    "embedding_length_per_layer_input": "it has per-layer input embeddings sized by the depth",
    "n_deepstack_layers": "its vision deepstack feeds fixed layers",
    "deepstack_mapping": "its vision deepstack feeds fixed layers",
    "target_layers": "it reads hidden states of fixed layers",
    "decoder_block_count": "it is an encoder-decoder model",
    "interleave_moe_layer_step": "its MoE layers are every {v}-th layer by index",
    "moe_every_n_layers": "its MoE layers are every {v}-th layer by index",
    "rescale_every_n_layers": "it rescales every {v}-th layer by index",
    "hrm.layers_per_stack": "its layers form fixed stacks",
    "attn_res.block_size": "its attention residuals are grouped by layer index",
    "hash_layer_count": "its first {v} layers route by hash",
}
_RECURRENT_TENSOR = re.compile(r"\.(ssm_|time_mix|channel_mix|shortconv)")


@dataclass
class BlockPlan:
    architecture: str
    n_blocks: int
    removed: list[int]
    kept: list[int]
    kv: dict[str, tuple] = field(default_factory=dict)  # rewrite_gguf overrides

    def rename(self, name: str) -> str:
        m = BLOCK.match(name)
        if m is None:
            return name
        return f"blk.{self.kept.index(int(m.group(1)))}.{name[m.end():]}"

    def keeps(self, name: str) -> bool:
        m = BLOCK.match(name)
        return m is None or int(m.group(1)) not in self.removed


def _value(reader: Any, key: str) -> Any:
    f = reader.fields.get(key)
    return None if f is None else f.contents()


def refusal(reader: Any) -> str | None:
    """Why this model cannot lose a block, or None."""
    arch = _value(reader, "general.architecture")
    if not arch:
        return "the GGUF names no general.architecture"
    if arch in INDEX_DERIVED:
        return f"{arch}: {INDEX_DERIVED[arch]}"
    for suffix, why in _REFUSE_KEYS.items():
        v = _value(reader, f"{arch}.{suffix}")
        if v is not None and v != 0 and v != [] and not (suffix.endswith("step") and v == 1):
            return f"{arch}: {why.format(v=v)} ({arch}.{suffix})"
    if any(k.startswith((f"{arch}.ssm.", f"{arch}.wkv.", f"{arch}.ple.")) for k in reader.fields):
        return f"{arch}: it carries a recurrent state or per-layer embeddings outside the blocks"
    bad = next((t.name for t in reader.tensors if _RECURRENT_TENSOR.search(t.name)), None)
    if bad:
        return f"{arch}: {bad} is a recurrent layer's state, which pruning would cut"
    return None


def _swa_layout(reader: Any, arch: str, n: int) -> list[bool] | None:
    """The per-layer sliding-window flags llama.cpp derives, or None when it reads an array or
    has no sliding window."""
    window = _value(reader, f"{arch}.attention.sliding_window")
    pattern = _value(reader, f"{arch}.attention.sliding_window_pattern")
    if not window or isinstance(pattern, list):
        return None
    if arch not in SWA_DEFAULTS:
        raise EdgepickError(
            f"{arch}: has a sliding window but edgepick does not know how llama.cpp lays it over "
            "the layers for this architecture; refusing rather than guessing")
    n_pattern, dense_first = SWA_DEFAULTS[arch]
    if pattern is not None:
        n_pattern = int(pattern)
    if dense_first:
        return [n_pattern == 0 or il % n_pattern != 0 for il in range(n)]
    return [n_pattern == 0 or il % n_pattern < n_pattern - 1 for il in range(n)]


def plan_removal(reader: Any, removed: list[int]) -> BlockPlan:
    """The renaming and the metadata of the file without `removed`; EdgepickError (one line)
    when the model cannot lose those blocks."""
    why = refusal(reader)
    if why:
        raise EdgepickError(f"cannot prune: {why}")
    arch = _value(reader, "general.architecture")
    n = int(_value(reader, f"{arch}.block_count") or 0)
    if n < 2:
        raise EdgepickError(f"cannot prune: {arch} has {n} block(s); at least one must stay")
    gone = sorted(set(removed))
    if not gone:
        raise EdgepickError("no blocks to remove")
    out = [b for b in gone if not 0 <= b < n]
    if out:
        raise EdgepickError(f"block(s) {out} out of range: the model has blocks 0..{n - 1}")
    kept = [b for b in range(n) if b not in gone]
    if not kept:
        raise EdgepickError(f"cannot remove all {n} blocks")
    plan = BlockPlan(arch, n, gone, kept)
    u32 = gguf.GGUFValueType.UINT32
    plan.kv[f"{arch}.block_count"] = (len(kept), u32)
    lead = _value(reader, f"{arch}.leading_dense_block_count")
    if lead:
        plan.kv[f"{arch}.leading_dense_block_count"] = (sum(1 for b in kept if b < int(lead)), u32)
    for name, f in reader.fields.items():
        if not name.startswith(f"{arch}.") or f.types[0] != gguf.GGUFValueType.ARRAY:
            continue
        suffix = name[len(arch) + 1:]
        values = f.contents()
        if suffix in NOT_PER_LAYER or len(values) != n:
            continue
        if suffix not in PER_LAYER:
            raise EdgepickError(
                f"cannot prune: {name} holds one entry per block but edgepick does not know what "
                "llama.cpp reads from it; refusing rather than guessing")
        plan.kv[name] = ([values[b] for b in kept], gguf.GGUFValueType.ARRAY)
    layout = _swa_layout(reader, arch, n)
    if layout is not None:
        plan.kv[f"{arch}.attention.sliding_window_pattern"] = (
            [layout[b] for b in kept], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.BOOL)
    return plan
