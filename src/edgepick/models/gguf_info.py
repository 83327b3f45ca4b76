"""Read a model's shape from a GGUF header (metadata and tensor table; no weights are loaded)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from edgepick.errors import EdgepickError
from edgepick.models.gguf_fast_reader import fast_reader
from edgepick.models.moe import active_params
from edgepick.models.quant_types import ftype_name_from_gguf
from edgepick.records.model import ModelSpec, TensorInfo

# llama.cpp's built-in sliding-window patterns (every Nth layer is global), used when the GGUF
# does not carry `<arch>.attention.sliding_window_pattern` (src/models/*.cpp).
SWA_PATTERNS = {"gemma2": 2, "gemma3": 6, "gemma3n": 5, "cohere2": 4, "exaone4": 4}
GGUF_MAGIC = b"GGUF"


def read_gguf(path: str | Path) -> Any:
    """Open a GGUF with the `gguf` package; turn every failure into a one-line error."""
    path = str(path)
    if not os.path.isfile(path):
        raise EdgepickError(f"{path}: no such file")
    size = os.path.getsize(path)
    if size == 0:
        raise EdgepickError(f"{path}: empty file, not a GGUF")
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise EdgepickError(f"{path}: not a GGUF file (magic {magic!r}, expected {GGUF_MAGIC!r})")
    try:
        reader = fast_reader(path)
    except ValueError as exc:
        msg = str(exc)
        if "reshape" in msg or "exceeds remaining file size" in msg:
            raise EdgepickError(f"{path}: truncated GGUF ({size} bytes): tensor data or header "
                                f"runs past the end of the file") from None
        raise EdgepickError(f"{path}: corrupt GGUF header ({msg})") from None
    except (KeyError, IndexError, OverflowError, MemoryError, TypeError) as exc:
        raise EdgepickError(f"{path}: corrupt GGUF header ({type(exc).__name__}: {exc})") from None
    end = max((t.data_offset + int(t.n_bytes) for t in reader.tensors), default=0)
    if end > size:
        raise EdgepickError(f"{path}: truncated GGUF: tensor data needs {end} bytes, file has {size}")
    return reader


def _field(reader: Any, key: str, default: Any = None) -> Any:
    f = reader.fields.get(key)
    if f is None:
        return default
    value = f.contents()
    return default if value is None else value


def gguf_spec(path: str | Path) -> ModelSpec:
    reader = read_gguf(path)
    path = str(path)
    arch = _field(reader, "general.architecture")
    if not arch:
        raise EdgepickError(f"{path}: GGUF has no general.architecture")

    def key(name: str, default: Any = None) -> Any:
        return _field(reader, f"{arch}.{name}", default)

    n_layers = int(key("block_count", 0))
    n_embd = int(key("embedding_length", 0))
    n_heads_raw = key("attention.head_count", 0)
    n_heads = int(max(n_heads_raw) if isinstance(n_heads_raw, list) else n_heads_raw)
    kv_raw = key("attention.head_count_kv", n_heads_raw)
    n_kv = [int(v) for v in kv_raw] if isinstance(kv_raw, list) else [int(kv_raw)] * n_layers
    head_k = int(key("attention.key_length", n_embd // n_heads if n_heads else 0))
    head_v = int(key("attention.value_length", head_k))
    swa = key("attention.sliding_window")
    swa_layers: list[int] = []
    if swa:
        pattern = key("attention.sliding_window_pattern", SWA_PATTERNS.get(arch))
        if isinstance(pattern, list):
            swa_layers = [i for i, is_swa in enumerate(pattern) if is_swa]
        elif pattern:
            swa_layers = [i for i in range(n_layers) if i % int(pattern) < int(pattern) - 1]
        else:
            swa_layers = list(range(n_layers))
    tokens = _field(reader, "tokenizer.ggml.tokens")
    vocab = int(key("vocab_size", len(tokens) if tokens is not None else 0))

    tensors = []
    counts: dict[str, int] = {}
    for t in reader.tensors:
        tname = t.tensor_type.name
        tensors.append(TensorInfo(name=t.name, type=tname, shape=[int(d) for d in t.shape],
                                  n_elements=int(t.n_elements), n_bytes=int(t.n_bytes)))
        counts[tname] = counts.get(tname, 0) + 1
    names = {t.name for t in tensors}
    ftype = _field(reader, "general.file_type")
    n_exp = int(key("expert_count", 0) or 0)
    n_used = int(key("expert_used_count", 0) or 0) if n_exp else 0
    approximations = []
    if key("ssm.state_size") or any(".ssm_" in n for n in names):
        approximations.append(f"{arch}: Mamba/SSM layers approximated as attention layers (their "
                              "recurrent state is not a KV cache; the KV figure is rough)")
    if key("full_attention_interval") or key("attention.linear_key_head_count"):
        approximations.append(f"{arch}: linear/hybrid attention layers approximated as full "
                              "attention (KV cache over-estimated)")
    return ModelSpec(
        source=path, source_kind="gguf",
        name=str(_field(reader, "general.name", Path(path).stem)),
        architecture=str(arch),
        n_params=sum(t.n_elements for t in tensors),
        n_layers=n_layers, n_embd=n_embd, n_heads=n_heads, n_kv_heads=n_kv,
        head_dim_k=head_k, head_dim_v=head_v,
        context_length=int(key("context_length", 0)), vocab_size=vocab,
        sliding_window=int(swa) if swa else None, swa_layers=swa_layers,
        tied_embeddings="output.weight" not in names,
        file_size_bytes=os.path.getsize(path),
        file_type=ftype_name_from_gguf(int(ftype)) if ftype is not None else None,
        tensors=tensors, quant_types=counts,
        n_experts=n_exp, n_experts_used=n_used,
        n_shared_experts=int(key("expert_shared_count", 0) or 0) if n_exp else 0,
        n_active_params=active_params(tensors, n_exp, n_used) if n_exp else None,
        # llama.cpp runs MLA (one latent K per token, no V cache) when the _mla lengths are set
        kv_lora_rank=(int(key("attention.kv_lora_rank", 0) or 0) or None)
        if key("attention.key_length_mla") and key("attention.value_length_mla") else None,
        approximations=approximations,
    )
