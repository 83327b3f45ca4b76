"""A LoRA adapter for a GGUF model, written with `gguf` the way llama.cpp's convert_lora_to_gguf
writes one (general.type "adapter", adapter.type "lora", adapter.lora.alpha; tensors
`<base>.lora_a` of ne [n_in, r] and `<base>.lora_b` of ne [r, n_out], llama-adapter.cpp). Random
A/B matrices for the attention projections of a few blocks: enough to change the answers; with
`zero=True`, B is zero, so the adapter adds nothing and the outputs must stay byte-identical."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGUFWriter

from edgepick.models.gguf_fast_reader import fast_reader

TARGETS = ("attn_q", "attn_v")


def write_lora(model: str | Path, out: str | Path, *, rank: int = 8, blocks: int = 4,
               alpha: float = 16.0, zero: bool = False, seed: int = 0,
               scale_b: float = 0.5) -> Path:
    """`out`, a LoRA adapter for `model` on its first `blocks` blocks' TARGETS."""
    reader = fast_reader(str(model))  # gguf's reader walks the vocabulary: seconds a model
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    shapes = {t.name: [int(x) for x in t.shape] for t in reader.tensors}  # ne order
    rng = np.random.default_rng(seed)
    w = GGUFWriter(str(out), arch)
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", alpha)
    for b in range(blocks):
        for t in TARGETS:
            name = f"blk.{b}.{t}.weight"
            n_in, n_out = shapes[name][0], shapes[name][1]
            a = (rng.standard_normal((rank, n_in)) / np.sqrt(n_in)).astype(np.float16)
            bm = np.zeros((n_out, rank), np.float16) if zero else \
                (rng.standard_normal((n_out, rank)) * scale_b / np.sqrt(rank)).astype(np.float16)
            w.add_tensor(f"{name}.lora_a", a)  # numpy (r, n_in) is ne [n_in, r]
            w.add_tensor(f"{name}.lora_b", bm)  # numpy (n_out, r) is ne [r, n_out]
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(out)
