"""Small random GGUFs written with `gguf`, and random edits of them: the version pairs the
update tests rebuild byte for byte (tensors changed, moved, renamed, added, dropped, retyped;
metadata changed; another alignment), where the real model is not the point."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

TYPES = ("F32", "F16", "Q8_0")


def write_gguf(path: Path, kv: dict, tensors: list[tuple[str, str, np.ndarray]],
               alignment: int | None = None) -> Path:
    import gguf
    from gguf.quants import quantize

    w = gguf.GGUFWriter(str(path), arch="llama")
    if alignment:
        w.add_custom_alignment(alignment)
    for key, value in kv.items():
        if isinstance(value, str):
            w.add_string(key, value)
        elif isinstance(value, list):
            w.add_array(key, value)
        else:
            w.add_uint32(key, value)
    for name, kind, data in tensors:
        if kind == "Q8_0":
            q = quantize(data.astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, data.astype(np.float16 if kind == "F16" else np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def random_model(rng: random.Random) -> tuple[dict, list]:
    kv = {"llama.block_count": rng.randint(1, 4), "tokenizer.chat_template": "{{ m }}" * 3,
          "tokenizer.ggml.tokens": [f"tok{i}" for i in range(rng.randint(5, 400))]}
    tensors = []
    for i in range(rng.randint(2, 9)):
        cols = 32 * rng.randint(1, 8)
        shape = (rng.randint(1, 6), cols)
        arr = np.random.default_rng(rng.randint(0, 1 << 30)).standard_normal(shape)
        tensors.append((f"blk.{i}.w", rng.choice(TYPES), arr))
    return kv, tensors


def mutate(rng: random.Random, kv: dict, tensors: list) -> tuple[dict, list, int | None]:
    kv, tensors = dict(kv), list(tensors)
    for _ in range(rng.randint(1, 4)):
        op = rng.choice(["change", "move", "rename", "add", "drop", "retype", "template", "kv"])
        i = rng.randrange(len(tensors))
        name, kind, arr = tensors[i]
        if op == "change":
            arr = arr.copy()
            arr[0, : arr.shape[1] // 2] += 0.5
            tensors[i] = (name, kind, arr)
        elif op == "move":
            tensors.insert(rng.randrange(len(tensors)), tensors.pop(i))
        elif op == "rename":
            tensors[i] = (name + ".renamed", kind, arr)
        elif op == "add":
            tensors.append((f"extra.{len(tensors)}", "F32", np.ones((2, 32))))
        elif op == "drop" and len(tensors) > 1:
            tensors.pop(i)
        elif op == "retype":
            tensors[i] = (name, rng.choice([t for t in TYPES if t != kind]), arr)
        elif op == "template":
            kv["tokenizer.chat_template"] = "{% for m in messages %}{{ m }}{% endfor %}"
        else:
            kv["general.name"] = f"v{rng.randint(0, 99)}"
    alignment = rng.choice([None, None, 64, 128])
    return kv, tensors, alignment


def block_model(path, arch: str, kv: dict, n_blocks: int = 4) -> str:
    """A model of `n_blocks` blocks of one F32 tensor each, with `kv` (arrays or uint32) on
    top of `{arch}.block_count`: what pruning reads and refuses, where the weights do not
    matter."""
    import gguf

    w = gguf.GGUFWriter(str(path), arch=arch)
    w.add_uint32(f"{arch}.block_count", n_blocks)
    for key, value in kv.items():
        if isinstance(value, list):
            w.add_array(key, value)
        else:
            w.add_uint32(key, value)
    w.add_tensor("token_embd.weight", np.ones((8, 32), dtype=np.float32))
    for b in range(n_blocks):
        w.add_tensor(f"blk.{b}.attn_q.weight", np.full((32, 32), b, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)
