"""A GGUF's per-tensor manifest: each tensor's name, type, shape, offset and the SHA-256 of its
data, each metadata key's byte range and SHA-256, the SHA-256 of the metadata (the header, the
key/value section and the tensor-info section) and of the whole file.

The layout comes from the `gguf` package's reader (headers only, through
models/gguf_fast_reader.py); the hashes from one sequential read of the file in 1 MiB pieces, so
a manifest costs one pass over the file and bounded memory whatever its size.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel, ConfigDict

from edgepick.errors import EdgepickError
from edgepick.models.gguf_info import read_gguf

MANIFEST_FORMAT = "edgepick-gguf-manifest"
MANIFEST_VERSION = 1
CHUNK = 1 << 20


class KvEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str
    offset: int  # in the file
    size: int  # the whole field: key, type and value
    sha256: str


class TensorEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    type: str  # ggml type name (Q4_0, F16, ...)
    shape: list[int]  # as GGUF stores it, innermost first
    offset: int  # in the file (the data section's start plus the tensor-info offset)
    size: int
    sha256: str


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str = MANIFEST_FORMAT
    version: int = MANIFEST_VERSION
    file: str
    size: int
    sha256: str  # the whole file
    metadata_sha256: str  # header + key/value section + tensor-info section
    metadata_size: int
    header_size: int  # magic, version, counts: the bytes before the first key
    data_start: int  # where the aligned tensor-data section begins
    alignment: int
    kv: list[KvEntry]
    tensors: list[TensorEntry]

    def tensor(self, name: str) -> TensorEntry | None:
        return self._by_name().get(name)

    def _by_name(self) -> dict[str, TensorEntry]:
        cache = self.__dict__.get("_names")
        if cache is None:
            cache = self.__dict__["_names"] = {t.name: t for t in self.tensors}
        return cache


@dataclass
class Layout:
    """Where each part of a GGUF lies, read from its header: no tensor data touched."""

    size: int
    header_size: int
    kv: list[tuple[str, int, int]]  # key, offset, size
    info_start: int
    info_end: int
    data_start: int
    alignment: int
    tensors: list[tuple[str, str, list[int], int, int]]  # name, type, shape, offset, size


def read_layout(path: str | Path) -> Layout:
    reader = read_gguf(path)
    size = Path(path).stat().st_size
    kv = []
    for f in reader.fields.values():
        if f.name.startswith("GGUF."):
            continue
        kv.append((f.name, int(f.offset), sum(int(p.nbytes) for p in f.parts)))
    header_size = kv[0][1] if kv else 24
    kv_end = kv[-1][1] + kv[-1][2] if kv else header_size
    tensors, info_end = [], kv_end
    for t in reader.tensors:
        tensors.append((t.name, t.tensor_type.name, [int(d) for d in t.shape],
                        int(t.data_offset), int(t.n_bytes)))
        info_end = int(t.field.offset) + sum(int(p.nbytes) for p in t.field.parts)
    info_start = int(reader.tensors[0].field.offset) if reader.tensors else kv_end
    return Layout(size, header_size, kv, info_start, info_end, int(reader.data_offset),
                  int(reader.alignment), tensors)


def hash_ranges(path: str | Path, ranges: Iterable[tuple[int, int]]) -> tuple[str, list[str]]:
    """The whole file's SHA-256 and each (offset, size) range's, in one sequential read."""
    spans = list(ranges)
    order = sorted(range(len(spans)), key=lambda i: spans[i][0])
    hashers = [hashlib.sha256() for _ in spans]
    whole = hashlib.sha256()
    nxt, active = 0, []
    pos = 0
    with open(path, "rb") as fh:
        while True:
            block = fh.read(CHUNK)
            if not block:
                break
            whole.update(block)
            end = pos + len(block)
            while nxt < len(order) and spans[order[nxt]][0] < end:
                active.append(order[nxt])
                nxt += 1
            view = memoryview(block)
            still = []
            for i in active:
                start, n = spans[i]
                lo, hi = max(start, pos), min(start + n, end)
                if hi > lo:
                    hashers[i].update(view[lo - pos:hi - pos])
                if start + n > end:
                    still.append(i)
            active = still
            pos = end
    return whole.hexdigest(), [h.hexdigest() for h in hashers]


def build_manifest(path: str | Path) -> Manifest:
    lay = read_layout(path)
    spans = [(0, lay.info_end)] + [(o, n) for _, o, n in lay.kv] + \
        [(o, n) for *_, o, n in lay.tensors]
    whole, digests = hash_ranges(path, spans)
    meta, kv_d, t_d = digests[0], digests[1:1 + len(lay.kv)], digests[1 + len(lay.kv):]
    return Manifest(
        file=Path(path).name, size=lay.size, sha256=whole, metadata_sha256=meta,
        metadata_size=lay.info_end, header_size=lay.header_size, data_start=lay.data_start,
        alignment=lay.alignment,
        kv=[KvEntry(key=k, offset=o, size=n, sha256=d) for (k, o, n), d in zip(lay.kv, kv_d)],
        tensors=[TensorEntry(name=name, type=ty, shape=shape, offset=o, size=n, sha256=d)
                 for (name, ty, shape, o, n), d in zip(lay.tensors, t_d)])


def load_manifest(path: str | Path) -> Manifest:
    p = Path(path)
    try:
        return Manifest.model_validate_json(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EdgepickError(f"{p}: not a readable manifest ({str(exc).splitlines()[0]})") from None
