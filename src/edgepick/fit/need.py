"""What memory a model needs while it runs: anonymous memory plus the file pages it reads.

The resident set of a llama.cpp process (its VmHWM) is not the model's need. With the file
mapped (llama.cpp's default, mmap), weights are clean file pages: the kernel keeps those each
token reads, and drops the others under pressure at no cost, because they can be read back
from the file. Two kinds of mapped page are never read again after load:

- the originals of repacked tensors (on AVX2/NEON llama.cpp copies Q4_0, Q4_K and IQ4_NL matmul
  weights into an interleaved layout at load and multiplies with the copy);
- an untied token embedding, of which a token reads one row.

They are shown as reclaimable, never counted as need. Without mmap (`use_mmap=False`) every
weight is read into anonymous memory once (a repacked tensor only in its repacked form) and the
need is the whole resident set. Need = anonymous (KV cache, compute buffers, context
structures, repacked copies, the runtime's heap) + file-backed (mapped weights a token reads,
the runtime's libraries); docs/fit.md, benchmarks/memory_need.py checks it.
"""

from __future__ import annotations

from typing import NamedTuple

from edgepick.fit.overhead import RUNTIME_FILE_BYTES, repacked_tensors
from edgepick.models.quant_types import PlannedTensor
from edgepick.records.model import ModelSpec


class MemoryNeed(NamedTuple):
    anon: dict[str, int]  # part -> bytes of anonymous memory
    file: dict[str, int]  # part -> bytes of file-backed pages read while running
    reclaimable: dict[str, int]  # mapped pages never read again after load (not need)

    @property
    def need_bytes(self) -> int:
        return sum(self.anon.values()) + sum(self.file.values())


def _is_repacked(t: PlannedTensor, repacked: set[str]) -> bool:
    return t.name in repacked


def memory_need(spec: ModelSpec, tensors: list[PlannedTensor], kv_bytes: int,
                parts: dict[str, int], cpu_features, mmap: bool = True) -> MemoryNeed:
    """`parts`: overhead.overhead_parts of the same model and settings."""
    runtime_file = min(RUNTIME_FILE_BYTES, parts["runtime"])
    repacked = {t.name for t in repacked_tensors(tensors, cpu_features)}
    tied = "output.weight" not in {t.name for t in tensors}
    anon = {"kv_cache": kv_bytes, "activations": parts["activations"],
            "context": parts["context"], "runtime": parts["runtime"] - runtime_file}
    if parts.get("adapter"):  # llama-adapter.cpp reads a LoRA into a buffer of its own
        anon["adapter"] = parts["adapter"]
    file = {"runtime_libraries": runtime_file}
    if parts.get("draft"):  # a speculative decoding draft: its own anonymous and file pages
        anon["draft"] = parts["draft"]
        file["draft_weights"] = parts.get("draft_file", 0)
    reclaimable: dict[str, int] = {}
    if mmap:
        anon["repacked_weights"] = parts["repacked_weights"]
        embd = sum(t.n_bytes for t in tensors if t.name == "token_embd.weight" and not tied
                   and not _is_repacked(t, repacked))
        originals = parts["repacked_weights"]
        file["weights"] = sum(t.n_bytes for t in tensors) - originals - embd
        reclaimable = {k: v for k, v in (("repacked_originals", originals),
                                         ("token_embedding", embd)) if v}
    else:
        anon["weights"] = sum(t.n_bytes for t in tensors)
        # read once, in the repacked layout where there is one; a tied embedding twice (the
        # lookup's original and the LM head's repacked copy)
        anon["repacked_weights"] = parts["repacked_weights"]
    return MemoryNeed(anon, file, reclaimable)
