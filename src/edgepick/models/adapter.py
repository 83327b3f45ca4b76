"""A LoRA adapter's GGUF header, checked against the model it is for, the way llama.cpp's
loader checks it (src/llama-adapter.cpp `llama_adapter_lora_init_impl`), so a wrong file is
refused in one line before an engine starts rather than by the engine mid-run.

Seed 003 §7.1: on-device fine-tuning aims at narrow tasks, so a device ships a base model plus
an adapter; the adapter's bytes are part of the deployment's memory (fit) and its SHA-256 part
of what is pinned (registry, deploy.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edgepick.errors import InputError
from edgepick.models.gguf_info import read_gguf

# The pinned engine (llama.cpp as vendored by llama-cpp-python 0.3.36) crashes in its CPU matmul
# on F32 adapter tensors (a null kernel in ggml_compute_forward_mul_mat, seen with gdb on
# llama-server and llama-cpp-python alike); llama.cpp's convert_lora_to_gguf.py writes F16 by
# default. Refused here rather than segfaulting the engine.
ENGINE_CRASHES_ON = {"F32"}


@dataclass(frozen=True)
class AdapterInfo:
    path: str
    arch: str
    alpha: float | None
    n_bytes: int  # what llama.cpp allocates for it ("CPU LoRA buffer size")
    targets: tuple[str, ...]  # the model tensors it changes
    types: tuple[str, ...]  # its tensors' types


def _str(reader, key: str) -> str | None:
    f = reader.fields.get(key)
    return None if f is None else str(f.contents())


def read_adapter(path: str | Path, model: str | Path | None = None) -> AdapterInfo:
    """The adapter at `path`; with `model`, also checked to fit that model (architecture, every
    target tensor present with the shapes the A/B pair needs)."""
    path = str(path)
    try:
        reader = read_gguf(path)
    except Exception as exc:  # read_gguf's own one line, with the file named
        raise InputError(path, f"not a readable LoRA adapter: {exc}") from None
    if _str(reader, "general.type") != "adapter":
        raise InputError(path, f"not an adapter: general.type is "
                               f"'{_str(reader, 'general.type')}', expected 'adapter'")
    if _str(reader, "adapter.type") != "lora":
        raise InputError(path, f"adapter.type is '{_str(reader, 'adapter.type')}', expected 'lora'")
    alpha_f = reader.fields.get("adapter.lora.alpha")
    pairs: dict[str, dict[str, object]] = {}
    for t in reader.tensors:
        base, _, half = t.name.rpartition(".lora_")
        if half not in ("a", "b"):
            raise InputError(path, f"tensor '{t.name}' is neither a .lora_a nor a .lora_b")
        pairs.setdefault(base, {})[half] = t
    for base, ab in pairs.items():
        if set(ab) != {"a", "b"}:
            raise InputError(path, f"'{base}' has lora_{next(iter(ab))} without its pair")
    types = tuple(sorted({t.tensor_type.name for t in reader.tensors}))
    bad = sorted(set(types) & ENGINE_CRASHES_ON)
    if bad:
        raise InputError(path, f"{', '.join(bad)} adapter tensors crash the pinned llama.cpp "
                               "(its CPU matmul has no kernel for them); convert the adapter "
                               "with --outtype f16")
    info = AdapterInfo(path=path, arch=_str(reader, "general.architecture") or "",
                       alpha=None if alpha_f is None else float(alpha_f.contents()),
                       n_bytes=sum(int(t.n_bytes) for t in reader.tensors),
                       targets=tuple(sorted(pairs)), types=types)
    if model is not None:
        _check_fits(info, pairs, model)
    return info


def _check_fits(info: AdapterInfo, pairs: dict, model: str | Path) -> None:
    m = read_gguf(model)
    arch = _str(m, "general.architecture") or ""
    if info.arch and info.arch != arch:
        raise InputError(info.path, f"an adapter for '{info.arch}', the model {model} is '{arch}'")
    shapes = {t.name: [int(x) for x in t.shape] for t in m.tensors}
    for base, ab in pairs.items():
        if base not in shapes:
            raise InputError(info.path, f"targets '{base}', which {model} does not have")
        a, b = ([int(x) for x in ab[k].shape] for k in ("a", "b"))
        w = shapes[base]
        if w[0] != a[0] or w[1] != b[1] or a[1] != b[0]:
            raise InputError(info.path, f"'{base}': lora_a {a} and lora_b {b} do not fit the "
                                        f"model's {w} (llama.cpp wants a [n_in, r], b [r, n_out])")
