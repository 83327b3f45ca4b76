"""`edgepick update diff OLD NEW -o UPDATE`: the package that turns OLD into NEW.

NEW is walked in file order. A key/value field or a tensor whose bytes OLD also holds (same
SHA-256, wherever it lies and whatever its name there) becomes a reference and costs a few bytes
of index; a run of zeros (alignment padding) becomes its length; everything else is literal:
the header and tensor-info section with any changed field (one lzma blob), and each changed
tensor (its own zlib blob, or its XOR with OLD's tensor of the same name when that compresses
better, as after a fine-tune that moved a few rows).
"""

from __future__ import annotations

import lzma
import os
import zlib
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Iterator

import numpy as np

from edgepick.errors import EdgepickError
from edgepick.progress import ProgressEvent, Tick
from edgepick.update.manifest import Manifest, TensorEntry, build_manifest
from edgepick.update.package import (CHUNK, Codec, FileId, Index, PackageWriter, Segment,
                                     planes, read_index)

PAYS = 0.98  # compress when it saves at least 2 %
XOR_PAYS = 0.9  # XOR with the old tensor when that compresses 10 % smaller again


@dataclass
class DiffResult:
    path: Path
    size: int
    new_size: int
    referenced: int  # tensors taken from the base
    shipped: int  # tensors whose data is in the package
    shipped_bytes: int  # their size before compression
    index: Index


@dataclass
class _Lit:
    offset: int
    length: int
    tensor: TensorEntry | None = None
    xor: TensorEntry | None = None


def file_id(m: Manifest) -> FileId:
    return FileId(sha256=m.sha256, size=m.size, metadata_sha256=m.metadata_sha256, name=m.file)


def _read(fh, offset: int, length: int) -> Iterator[bytes]:
    fh.seek(offset)
    while length:
        block = fh.read(min(CHUNK, length))
        if not block:
            raise EdgepickError(f"{fh.name}: ends before byte {offset + length}")
        length -= len(block)
        yield block


def _xor(a: bytes, b: bytes) -> bytes:
    return (np.frombuffer(a, np.uint8) ^ np.frombuffer(b, np.uint8)).tobytes()


def _plan(old: Manifest, new: Manifest, fh) -> list:
    """NEW as (kind, ...) entries in file order."""
    kv_by_hash = {k.sha256: k for k in old.kv}
    t_by_hash: dict[str, list[TensorEntry]] = {}
    for t in old.tensors:
        t_by_hash.setdefault(t.sha256, []).append(t)
    items = sorted([(k.offset, k.size, "kv", k) for k in new.kv] +
                   [(t.offset, t.size, "tensor", t) for t in new.tensors], key=lambda x: x[0])
    plan, pos = [], 0

    def filler(end: int) -> None:
        if end <= pos:
            return
        zero = all(not any(b) for b in _read(fh, pos, end - pos))
        plan.append(("zeros", end - pos) if zero and end > new.metadata_size
                    else _Lit(pos, end - pos))

    for offset, size, kind, entry in items:
        if offset < pos:
            raise EdgepickError(f"{new.file}: '{getattr(entry, 'name', getattr(entry, 'key', ''))}'"
                                " overlaps the part before it; not a layout this tool rebuilds")
        filler(offset)
        if kind == "kv":
            base = kv_by_hash.get(entry.sha256)
            plan.append(("kv", entry, base) if base and base.size == size else _Lit(offset, size))
        else:
            same = t_by_hash.get(entry.sha256, [])
            base = next((t for t in same if t.name == entry.name), same[0] if same else None)
            if base is not None:
                plan.append(("tensor", entry, base))
            else:
                twin = old.tensor(entry.name)
                plan.append(_Lit(offset, size, entry,
                                 twin if twin is not None and twin.size == size else None))
        pos = offset + size
    filler(new.size)
    return _merge(plan)


def _merge(plan: list) -> list:
    """Adjacent literal metadata pieces become one blob."""
    out: list = []
    for p in plan:
        prev = out[-1] if out else None
        if isinstance(p, _Lit) and p.tensor is None and isinstance(prev, _Lit) \
                and prev.tensor is None and prev.offset + prev.length == p.offset:
            out[-1] = _Lit(prev.offset, prev.length + p.length)
        else:
            out.append(p)
    return out


def _choose(sample: bytes, old_sample: bytes | None,
            element: int | None) -> tuple[Codec, bool, int | None]:
    """(codec, xor, shuffle) for a tensor: the smallest of its first MiB stored raw, zlib'd,
    as byte planes (F16/F32), or XORed with the old tensor (which must pay 10 % more)."""
    if not sample:
        return "raw", False, None
    size = {("raw", False, None): len(sample)}

    def try_(data: bytes, xor: bool) -> None:
        size[("zlib", xor, None)] = len(zlib.compress(data, 6)) / (XOR_PAYS if xor else PAYS)
        if element and len(data) % element == 0:
            size[("zlib", xor, element)] = \
                len(zlib.compress(planes(data, element), 6)) / (XOR_PAYS if xor else PAYS)

    try_(sample, False)
    if old_sample is not None:
        try_(_xor(sample, old_sample), True)
    return min(size, key=lambda k: size[k])


ELEMENT = {"F16": 2, "BF16": 2, "F32": 4}


def _meta_codec(data: bytes) -> Codec:
    return "lzma" if len(lzma.compress(data, preset=6)) < PAYS * len(data) else "raw"


def diff(old: str | Path, new: str | Path, out: str | Path,
         progress: Tick | None = None) -> DiffResult:
    old_p, new_p, out_p = Path(old), Path(new), Path(out)
    om, nm = build_manifest(old_p), build_manifest(new_p)
    tmp = out_p.with_name(out_p.name + f".partial{os.getpid()}")
    writer = PackageWriter(tmp)
    segments: list[Segment] = []
    referenced = shipped = shipped_bytes = 0
    try:
        with open(new_p, "rb") as fh, open(old_p, "rb") as oh:
            plan = _plan(om, nm, fh)
            for i, p in enumerate(plan):
                if isinstance(p, tuple) and p[0] == "zeros":
                    segments.append(Segment(kind="zeros", length=p[1]))
                elif isinstance(p, tuple):
                    kind, entry, base = p
                    referenced += kind == "tensor"
                    segments.append(Segment(kind=kind, length=entry.size,
                                            name=getattr(entry, "name", None) or entry.key,
                                            base=getattr(base, "name", None) or base.key,
                                            base_offset=base.offset, sha256=base.sha256))
                elif p.tensor is None:
                    data = b"".join(_read(fh, p.offset, p.length))
                    blob = writer.blob(iter([data]), _meta_codec(data))
                    segments.append(Segment(kind="blob", length=p.length, blob=blob))
                else:
                    shipped += 1
                    shipped_bytes += p.length
                    segments.append(_tensor_blob(writer, p, fh, oh))
                if progress:
                    progress(ProgressEvent(i + 1, len(plan), "segments"))
        index = Index(base=file_id(om), new=file_id(nm), segments=segments,
                      created_by=f"edgepick {_version()}")
        writer.close(index)
        os.replace(tmp, out_p)
    except BaseException:
        writer.abort()
        raise
    return DiffResult(out_p, out_p.stat().st_size, nm.size, referenced, shipped, shipped_bytes,
                      read_index(out_p, verify=False))


def _tensor_blob(writer: PackageWriter, p: _Lit, fh, oh) -> Segment:
    t = p.tensor
    assert t is not None
    sample = next(_read(fh, p.offset, min(CHUNK, p.length)), b"")
    old_sample = next(_read(oh, p.xor.offset, min(CHUNK, p.length)), b"") if p.xor else None
    codec, xor, shuffle = _choose(sample, old_sample, ELEMENT.get(t.type))
    if xor and p.xor is not None:
        pieces = (_xor(a, b) for a, b in zip(_read(fh, p.offset, p.length),
                                             _read(oh, p.xor.offset, p.length)))
        blob = writer.blob(pieces, codec, shuffle)
        return Segment(kind="xor", length=p.length, blob=blob, name=t.name, base=p.xor.name,
                       base_offset=p.xor.offset, sha256=p.xor.sha256)
    blob = writer.blob(_read(fh, p.offset, p.length), codec, shuffle)
    return Segment(kind="blob", length=p.length, blob=blob, name=t.name)


def _version() -> str:
    try:
        return version("edgepick")
    except PackageNotFoundError:
        return "dev"
