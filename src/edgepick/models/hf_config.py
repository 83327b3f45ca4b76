"""A model's shape from a Hugging Face `config.json`, for planning models not downloaded yet.

The tensor table is synthesised in GGUF naming, as llama.cpp's convert_hf_to_gguf.py writes it,
for a decoder with attention (grouped-query, or DeepSeek's multi-head latent attention) and a
gated FFN or mixture of experts (routed experts, shared experts, dense leading layers), so that
quantized sizes are predicted with the same rules as for a real GGUF. Blocks it cannot model yet
(Mamba/SSM layers, linear or hybrid attention) are approximated as attention layers, and the spec
says so in `approximations`.
"""

from __future__ import annotations

import json
import os
from importlib.resources import files
from pathlib import Path
from typing import Any

from edgepick.errors import EdgepickError, InputError
from edgepick.records.model import ModelSpec, TensorInfo
from edgepick.models.moe import active_params
from edgepick.models.quant_types import row_bytes

SWA_PATTERNS = {"gemma2": 2, "gemma3": 6, "gemma3_text": 6, "cohere2": 4}
# Configs whose layers are not all attention + FFN: what the tensor table approximates.
_SSM_TYPES = {"mamba", "mamba2", "jamba", "falcon_h1", "falcon_mamba", "nemotron_h", "zamba",
              "zamba2", "granitemoehybrid", "bamba", "plamo2", "lfm2"}
_LINEAR_ATTENTION_TYPES = {"qwen3_next", "rwkv", "rwkv6", "rwkv7", "minimax", "minimax_m1"}
_QK_NORM_TYPES = {"qwen3", "qwen3_moe", "olmo2", "olmoe", "gemma3", "gemma3_text"}


def _load(path: str) -> dict[str, Any]:
    if not os.path.isfile(path):
        raise EdgepickError(f"{path}: no such file")
    try:
        with open(path, encoding="utf-8") as fh:
            cfg = json.load(fh)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON ({exc.msg}, column {exc.colno})",
                         line=exc.lineno) from None
    except UnicodeDecodeError:
        raise InputError(path, "not a text file (expected a JSON config)") from None
    if not isinstance(cfg, dict):
        raise InputError(path, "expected a JSON object at the top level")
    # multimodal configs keep the language model under text_config
    if isinstance(cfg.get("text_config"), dict):
        merged = dict(cfg["text_config"])
        merged.setdefault("model_type", cfg.get("model_type"))
        merged.setdefault("tie_word_embeddings", cfg.get("tie_word_embeddings"))
        cfg = merged
    return cfg


def _int(cfg: dict, path: str, *names: str, default: int | None = None) -> int:
    for name in names:
        if cfg.get(name) is not None:
            value = cfg[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise InputError(path, f"expected a non-negative number, got {value!r}", field=name)
            return int(value)
    if default is None:
        raise InputError(path, "required field missing", field=names[0])
    return default


def _llama_cpp_ignores_swa(cfg: dict) -> bool:
    """Whether llama.cpp runs this config's architecture with full attention whatever its
    `sliding_window` says (Mistral-7B v0.1 converts to `llama`, which reads no window): the
    architectures whose model reads the window come from the pinned source
    (data/llama_cpp_archs.json, scripts/llama_archs.py)."""
    data = json.loads(files("edgepick").joinpath("data/llama_cpp_archs.json").read_text())
    archs = [data["hf_architectures"].get(str(c)) for c in cfg.get("architectures") or []]
    archs = [a for a in archs if a]
    return bool(archs) and archs[0] not in data.get("sliding_window_architectures", [])


def _exotic(cfg: dict, model_type: str) -> list[str]:
    """One line per block kind the tensor table only approximates."""
    out = []
    if (model_type in _SSM_TYPES or any(k in cfg for k in ("ssm_cfg", "mamba_d_state",
                                                           "ssm_state_size", "mamba_expand"))):
        out.append(f"{model_type}: Mamba/SSM layers approximated as attention layers (their "
                   "recurrent state is not a KV cache; weights and KV are rough)")
    if (model_type in _LINEAR_ATTENTION_TYPES
            or any(k in cfg for k in ("linear_num_key_heads", "full_attention_interval"))):
        out.append(f"{model_type}: linear/hybrid attention layers approximated as full attention "
                   "(KV cache over-estimated, weights rough)")
    return out


def _moe_layers(cfg: dict, path: str, n_layers: int, n_exp: int) -> list[int]:
    """Which layers hold routed experts: all, after DeepSeek's `first_k_dense_replace` dense
    layers (every `moe_layer_freq`-th), or Qwen's every `decoder_sparse_step`-th outside
    `mlp_only_layers`."""
    if not n_exp:
        return []
    first_dense = _int(cfg, path, "first_k_dense_replace", default=0)
    freq = max(1, _int(cfg, path, "moe_layer_freq", default=1))
    step = max(1, _int(cfg, path, "decoder_sparse_step", default=1))
    dense_only = cfg.get("mlp_only_layers") or []
    if not isinstance(dense_only, list) or not all(isinstance(i, int) for i in dense_only):
        raise InputError(path, "expected a list of layer indices", field="mlp_only_layers")
    return [i for i in range(n_layers)
            if i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and i not in dense_only]


def hf_config_spec(path: str | Path) -> ModelSpec:
    path = str(path)
    cfg = _load(path)
    n_embd = _int(cfg, path, "hidden_size", "n_embd", "d_model")
    n_layers = _int(cfg, path, "num_hidden_layers", "n_layer", "num_layers")
    n_heads = _int(cfg, path, "num_attention_heads", "n_head")
    if n_heads == 0 or n_layers == 0 or n_embd == 0:
        raise InputError(path, "hidden_size, num_hidden_layers and num_attention_heads must be > 0")
    n_kv = _int(cfg, path, "num_key_value_heads", "n_head_kv", default=n_heads)
    head_k = _int(cfg, path, "head_dim", default=n_embd // n_heads)
    head_v = _int(cfg, path, "v_head_dim", default=head_k)
    n_ff = _int(cfg, path, "intermediate_size", "n_inner", "ffn_dim", default=4 * n_embd)
    vocab = _int(cfg, path, "vocab_size")
    ctx = _int(cfg, path, "max_position_embeddings", "n_positions", "seq_length", default=0)
    n_exp = _int(cfg, path, "num_local_experts", "num_experts", "n_routed_experts", default=0)
    n_used = _int(cfg, path, "num_experts_per_tok", "num_experts_per_token", "moe_topk",
                  default=2 if n_exp else 0)
    n_ff_exp = _int(cfg, path, "moe_intermediate_size", default=n_ff)
    n_shared = _int(cfg, path, "n_shared_experts", "num_shared_experts", default=0)
    # Qwen2-MoE: one shared expert of its own width, gated by a sigmoid of one row
    ff_shared = _int(cfg, path, "shared_expert_intermediate_size", default=0)
    if ff_shared and not n_shared:
        n_shared = 1
    elif n_shared:
        ff_shared = n_shared * n_ff_exp
    tied = bool(cfg.get("tie_word_embeddings", False))
    model_type = str(cfg.get("model_type") or "unknown")
    kv_lora = _int(cfg, path, "kv_lora_rank", default=0)
    q_lora = _int(cfg, path, "q_lora_rank", default=0)
    approximations = _exotic(cfg, model_type)

    swa = cfg.get("sliding_window") if cfg.get("use_sliding_window", True) is not False else None
    if swa and _llama_cpp_ignores_swa(cfg):
        swa = None
    swa_layers: list[int] = []
    if swa:
        layer_types = cfg.get("layer_types")
        if isinstance(layer_types, list) and len(layer_types) == n_layers:
            swa_layers = [i for i, t in enumerate(layer_types) if "sliding" in str(t)]
        else:
            pattern = cfg.get("sliding_window_pattern") or SWA_PATTERNS.get(model_type)
            swa_layers = ([i for i in range(n_layers) if i % int(pattern) < int(pattern) - 1]
                          if pattern else list(range(n_layers)))
        if not swa_layers:
            swa = None

    moe_layers = set(_moe_layers(cfg, path, n_layers, n_exp))
    shapes: list[tuple[str, list[int]]] = [("token_embd.weight", [n_embd, vocab])]
    for i in range(n_layers):
        b = f"blk.{i}."
        shapes.append((b + "attn_norm.weight", [n_embd]))
        if kv_lora:
            shapes += _mla_attention(cfg, path, b, n_embd, n_heads, kv_lora, q_lora)
        else:
            shapes += [(b + "attn_q.weight", [n_embd, n_heads * head_k]),
                       (b + "attn_k.weight", [n_embd, n_kv * head_k]),
                       (b + "attn_v.weight", [n_embd, n_kv * head_v]),
                       (b + "attn_output.weight", [n_heads * head_v, n_embd])]
            if model_type in _QK_NORM_TYPES:
                shapes += [(b + "attn_q_norm.weight", [head_k]), (b + "attn_k_norm.weight", [head_k])]
        shapes.append((b + "ffn_norm.weight", [n_embd]))
        if i in moe_layers:
            shapes += [(b + "ffn_gate_inp.weight", [n_embd, n_exp]),
                       (b + "ffn_gate_exps.weight", [n_embd, n_ff_exp, n_exp]),
                       (b + "ffn_up_exps.weight", [n_embd, n_ff_exp, n_exp]),
                       (b + "ffn_down_exps.weight", [n_ff_exp, n_embd, n_exp])]
            if cfg.get("topk_method") == "noaux_tc":  # DeepSeek-V3's routing bias
                shapes.append((b + "exp_probs_b.bias", [n_exp]))
            if ff_shared:
                shapes += [(b + "ffn_gate_shexp.weight", [n_embd, ff_shared]),
                           (b + "ffn_up_shexp.weight", [n_embd, ff_shared]),
                           (b + "ffn_down_shexp.weight", [ff_shared, n_embd])]
                if "shared_expert_intermediate_size" in cfg:
                    shapes.append((b + "ffn_gate_inp_shexp.weight", [n_embd]))
        else:
            shapes += [(b + "ffn_gate.weight", [n_embd, n_ff]),
                       (b + "ffn_up.weight", [n_embd, n_ff]),
                       (b + "ffn_down.weight", [n_ff, n_embd])]
    shapes.append(("output_norm.weight", [n_embd]))
    if not tied:
        shapes.append(("output.weight", [n_embd, vocab]))

    dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16")
    wtype = {"float32": "F32", "float16": "F16"}.get(dtype, "BF16")
    tensors = []
    for name, shape in shapes:
        n = 1
        for d in shape:
            n *= d
        # 1-D tensors and the expert router stay F32 (convert_hf_to_gguf.py)
        ttype = wtype if len(shape) > 1 and "ffn_gate_inp" not in name else "F32"
        rows = n // shape[0]
        tensors.append(TensorInfo(name=name, type=ttype, shape=shape, n_elements=n,
                                  n_bytes=row_bytes(ttype, shape[0]) * rows))
    if kv_lora:
        # llama.cpp caches the compressed latent: one "head" of kv_lora_rank + rope dims as K
        # and kv_lora_rank as V per token and layer (fit/memory.py reads the rule)
        rope = _int(cfg, path, "qk_rope_head_dim", default=64)
        n_kv, head_k, head_v = 1, kv_lora + rope, kv_lora
    n_exp_eff = n_exp if moe_layers else 0
    counts: dict[str, int] = {}
    for t in tensors:
        counts[t.type] = counts.get(t.type, 0) + 1
    return ModelSpec(
        source=path, source_kind="hf_config", name=str(cfg.get("_name_or_path") or Path(path).parent.name or model_type),
        architecture=model_type, n_params=sum(t.n_elements for t in tensors),
        n_layers=n_layers, n_embd=n_embd, n_heads=n_heads, n_kv_heads=[n_kv] * n_layers,
        head_dim_k=head_k, head_dim_v=head_v, context_length=ctx, vocab_size=vocab,
        sliding_window=int(swa) if swa else None, swa_layers=swa_layers, tied_embeddings=tied,
        file_type=wtype, tensors=tensors, quant_types=counts,
        n_experts=n_exp_eff, n_experts_used=n_used if n_exp_eff else 0,
        n_shared_experts=n_shared if n_exp_eff else 0,
        n_active_params=active_params(tensors, n_exp_eff, n_used) if n_exp_eff else None,
        kv_lora_rank=kv_lora or None, approximations=approximations,
        hf_architectures=[str(a) for a in cfg.get("architectures") or []],
    )


def _mla_attention(cfg: dict, path: str, b: str, n_embd: int, n_heads: int, kv_lora: int,
                   q_lora: int) -> list[tuple[str, list[int]]]:
    """DeepSeek-V2/V3 attention as llama.cpp's deepseek2 stores it: low-rank Q (or a full Q),
    the joint KV down-projection with the shared rope key, and kv_b split per head into K and V
    up-projections (the absorbed form llama.cpp's MLA path multiplies with)."""
    nope = _int(cfg, path, "qk_nope_head_dim", default=128)
    rope = _int(cfg, path, "qk_rope_head_dim", default=64)
    v_dim = _int(cfg, path, "v_head_dim", default=128)
    q_dim = n_heads * (nope + rope)
    out: list[tuple[str, list[int]]] = []
    if q_lora:
        out += [(b + "attn_q_a.weight", [n_embd, q_lora]), (b + "attn_q_a_norm.weight", [q_lora]),
                (b + "attn_q_b.weight", [q_lora, q_dim])]
    else:
        out.append((b + "attn_q.weight", [n_embd, q_dim]))
    return out + [(b + "attn_kv_a_mqa.weight", [n_embd, kv_lora + rope]),
                  (b + "attn_kv_a_norm.weight", [kv_lora]),
                  (b + "attn_k_b.weight", [nope, kv_lora, n_heads]),
                  (b + "attn_v_b.weight", [kv_lora, v_dim, n_heads]),
                  (b + "attn_output.weight", [n_heads * v_dim, n_embd])]
