"""A model's shape from a Hugging Face `config.json`, for planning models not downloaded yet.

The tensor table is synthesised in GGUF naming for a standard decoder (attention + gated FFN,
optionally mixture-of-experts), so that quantized sizes are predicted with the same rules as for
a real GGUF. Exotic blocks (Mamba, MLA) are not modelled; the count is then approximate.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from edgepick.errors import EdgepickError, InputError
from edgepick.records.model import ModelSpec, TensorInfo
from edgepick.models.quant_types import row_bytes

SWA_PATTERNS = {"gemma2": 2, "gemma3": 6, "gemma3_text": 6, "cohere2": 4}


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
    n_ff_exp = _int(cfg, path, "moe_intermediate_size", default=n_ff)
    tied = bool(cfg.get("tie_word_embeddings", False))
    model_type = str(cfg.get("model_type") or "unknown")

    swa = cfg.get("sliding_window") if cfg.get("use_sliding_window", True) is not False else None
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

    shapes: list[tuple[str, list[int]]] = [("token_embd.weight", [n_embd, vocab])]
    for i in range(n_layers):
        b = f"blk.{i}."
        shapes += [(b + "attn_norm.weight", [n_embd]),
                   (b + "attn_q.weight", [n_embd, n_heads * head_k]),
                   (b + "attn_k.weight", [n_embd, n_kv * head_k]),
                   (b + "attn_v.weight", [n_embd, n_kv * head_v]),
                   (b + "attn_output.weight", [n_heads * head_v, n_embd]),
                   (b + "ffn_norm.weight", [n_embd])]
        if n_exp:
            shapes += [(b + "ffn_gate_inp.weight", [n_embd, n_exp]),
                       (b + "ffn_gate_exps.weight", [n_embd, n_ff_exp, n_exp]),
                       (b + "ffn_up_exps.weight", [n_embd, n_ff_exp, n_exp]),
                       (b + "ffn_down_exps.weight", [n_ff_exp, n_embd, n_exp])]
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
        ttype = wtype if len(shape) > 1 else "F32"
        rows = n // shape[0]
        tensors.append(TensorInfo(name=name, type=ttype, shape=shape, n_elements=n,
                                  n_bytes=row_bytes(ttype, shape[0]) * rows))
    return ModelSpec(
        source=path, source_kind="hf_config", name=str(cfg.get("_name_or_path") or Path(path).parent.name or model_type),
        architecture=model_type, n_params=sum(t.n_elements for t in tensors),
        n_layers=n_layers, n_embd=n_embd, n_heads=n_heads, n_kv_heads=[n_kv] * n_layers,
        head_dim_k=head_k, head_dim_v=head_v, context_length=ctx, vocab_size=vocab,
        sliding_window=int(swa) if swa else None, swa_layers=swa_layers, tied_embeddings=tied,
        file_type=wtype, tensors=tensors, quant_types={wtype: sum(1 for t in tensors if t.type == wtype)},
    )
