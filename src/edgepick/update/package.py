"""The update package's file format (version 1), self-describing; docs/registry.md has the
byte layout:

    "EPGGUFΔ" (8 bytes, UTF-8) | format version, u32 LE | 0, u32 | blob bytes ... |
    index (lzma-compressed JSON) | index length, u64 LE | SHA-256 of every byte before it

The index names the base (SHA-256, size, metadata SHA-256) and the new file (the same three),
and lists the new file as segments in order: literal bytes from a blob, a base key/value field
or tensor referenced by name and SHA-256 (with its offset in the base), a tensor stored as its
XOR with the base's tensor of that name, or a run of zero bytes (alignment padding). A blob is
stored raw, or zlib/lzma-compressed where that paid; each carries the SHA-256 of its bytes.

Codecs are the standard library's (no new dependency): zlib for tensor data (on quantized
weights it saves as much as lzma at ~20× its speed), lzma for metadata (a tokenizer compresses
to a quarter), raw where neither saves at least 2 %. F16/BF16/F32 tensors may be stored as byte
planes (`shuffle`), which zlib compresses about 7 % further on F16 weights.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import struct
import zlib
from pathlib import Path
from typing import BinaryIO, Iterator, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from edgepick.errors import EdgepickError

MAGIC = b"EPGGUF\xce\x94"  # "EPGGUFΔ"
FORMAT = "edgepick-gguf-delta"
VERSION = 1
PREFIX = struct.Struct("<8sII")
TAIL = struct.Struct("<Q")
DIGEST = 32
CHUNK = 1 << 20
Codec = Literal["raw", "zlib", "lzma"]


class CorruptPackage(EdgepickError):
    """The package's bytes are not what it says they are."""


class FileId(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sha256: str
    size: int
    metadata_sha256: str
    name: str = ""


class Blob(BaseModel):
    model_config = ConfigDict(extra="forbid")
    offset: int  # from the start of the package
    stored: int
    size: int  # decoded
    codec: Codec
    sha256: str  # of the decoded bytes
    # each CHUNK of the bytes was stored as byte planes of this element size (F16: 2, F32: 4):
    # the exponents' bytes together compress better than interleaved with the mantissas'
    shuffle: int | None = None


class Segment(BaseModel):
    """One piece of the new file, in order. kind: blob (literal bytes), kv / tensor (copy the
    base's field or tensor at `base_offset`, whose bytes hash to `sha256`), xor (a blob XORed
    with the base tensor at `base_offset`), zeros."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["blob", "kv", "tensor", "xor", "zeros"]
    length: int
    blob: int | None = None
    name: str | None = None  # the new file's key or tensor this segment holds, when one
    base: str | None = None  # the base's key or tensor referenced
    base_offset: int | None = None
    sha256: str | None = None  # of the referenced base bytes


class Index(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str = FORMAT
    version: int = VERSION
    base: FileId
    new: FileId
    segments: list[Segment]
    blobs: list[Blob] = Field(default_factory=list)
    created_by: str = ""


class PackageWriter:
    """Blobs are appended as they are encoded; `close` writes the index and the digest."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh = open(path, "wb")
        self.hash = hashlib.sha256()
        self.blobs: list[Blob] = []
        self._put(PREFIX.pack(MAGIC, VERSION, 0))

    def _put(self, data: bytes) -> None:
        self.fh.write(data)
        self.hash.update(data)

    @property
    def pos(self) -> int:
        return self.fh.tell()

    def blob(self, pieces: Iterator[bytes], codec: Codec, shuffle: int | None = None) -> int:
        """Encode the pieces as one blob; returns its index. With `shuffle`, every piece but
        the last must be CHUNK bytes (decode regroups by CHUNK)."""
        start, raw, size = self.pos, hashlib.sha256(), 0
        enc = _encoder(codec)
        for piece in pieces:
            raw.update(piece)
            size += len(piece)
            stored = planes(piece, shuffle) if shuffle else piece
            out = enc.compress(stored) if enc else stored
            if out:
                self._put(out)
        if enc:
            self._put(enc.flush())
        self.blobs.append(Blob(offset=start, stored=self.pos - start, size=size, codec=codec,
                               sha256=raw.hexdigest(), shuffle=shuffle))
        return len(self.blobs) - 1

    def close(self, index: Index) -> None:
        index.blobs = self.blobs
        data = lzma.compress(index.model_dump_json(exclude_none=True).encode("utf-8"))
        self._put(data)
        self._put(TAIL.pack(len(data)))
        self.fh.write(self.hash.digest())
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()

    def abort(self) -> None:
        self.fh.close()
        self.path.unlink(missing_ok=True)


def _encoder(codec: Codec):
    if codec == "zlib":
        return zlib.compressobj(6)
    if codec == "lzma":
        return lzma.LZMACompressor(preset=6)
    return None


def read_index(path: str | Path, verify: bool = True) -> Index:
    """The package's index; with `verify`, every byte is first checked against its digest, so
    nothing is done with a package cut short, altered or of another kind."""
    p = Path(path)
    try:
        size = p.stat().st_size
        with open(p, "rb") as fh:
            head = fh.read(PREFIX.size)
            if len(head) < PREFIX.size or head[:8] != MAGIC:
                raise CorruptPackage(f"{p}: not an edgepick update package (no {FORMAT} magic)")
            _, version, _ = PREFIX.unpack(head)
            if version != VERSION:
                raise CorruptPackage(f"{p}: package format {version}; this edgepick reads "
                                     f"format {VERSION}")
            if size < PREFIX.size + TAIL.size + DIGEST:
                raise CorruptPackage(f"{p}: cut short ({size} bytes)")
            if verify:
                _check_digest(fh, p, size)
            fh.seek(size - DIGEST - TAIL.size)
            (n,) = TAIL.unpack(fh.read(TAIL.size))
            if n > size - DIGEST - TAIL.size - PREFIX.size:
                raise CorruptPackage(f"{p}: corrupt (index length {n} past the file)")
            fh.seek(size - DIGEST - TAIL.size - n)
            raw = lzma.decompress(fh.read(n))
        index = Index.model_validate_json(raw)
    except OSError as exc:
        raise EdgepickError(f"{p}: cannot read the package ({exc.strerror or exc})") from None
    except (lzma.LZMAError, ValueError) as exc:
        raise CorruptPackage(f"{p}: corrupt package index ({str(exc).splitlines()[0]})") from None
    if index.format != FORMAT:
        raise CorruptPackage(f"{p}: format '{index.format}', expected '{FORMAT}'")
    return index


def _check_digest(fh: BinaryIO, p: Path, size: int) -> None:
    h, left = hashlib.sha256(), size - DIGEST
    fh.seek(0)
    while left:
        block = fh.read(min(CHUNK, left))
        if not block:
            break
        h.update(block)
        left -= len(block)
    if h.digest() != fh.read(DIGEST):
        raise CorruptPackage(f"{p}: corrupt or cut short (its SHA-256 does not match the digest "
                             "it ends with); refusing it")


def planes(data: bytes, size: int) -> bytes:
    """Byte planes: every element's first byte, then every second byte, …"""
    return np.frombuffer(data, np.uint8).reshape(-1, size).T.tobytes()


def unplanes(data: bytes, size: int) -> bytes:
    return np.frombuffer(data, np.uint8).reshape(size, -1).T.tobytes()


def _regroup(pieces: Iterator[bytes], size: int) -> Iterator[bytes]:
    """Shuffled pieces back to bytes: regrouped into the encoder's CHUNKs, then interleaved."""
    pending = b""
    for piece in pieces:
        pending += piece
        while len(pending) >= CHUNK:
            yield unplanes(pending[:CHUNK], size)
            pending = pending[CHUNK:]
    if pending:
        if len(pending) % size:
            raise CorruptPackage("a shuffled blob does not end on an element")
        yield unplanes(pending, size)


def decode(fh: BinaryIO, blob: Blob) -> Iterator[bytes]:
    """The blob's bytes in pieces of at most CHUNK, checked against its SHA-256 at the end."""
    stream = _decoded(fh, blob)
    if blob.shuffle:
        stream = _regroup(stream, blob.shuffle)
    h, out = hashlib.sha256(), 0
    for piece in stream:
        h.update(piece)
        out += len(piece)
        yield piece
    if out != blob.size or h.hexdigest() != blob.sha256:
        raise CorruptPackage("a blob's bytes do not match its SHA-256")


def _decoded(fh: BinaryIO, blob: Blob) -> Iterator[bytes]:
    """The blob's stored bytes, decompressed."""
    fh.seek(blob.offset)
    left = blob.stored
    dec = zlib.decompressobj() if blob.codec == "zlib" else \
        lzma.LZMADecompressor() if blob.codec == "lzma" else None
    try:
        while left:
            data = fh.read(min(CHUNK, left))
            if not data:
                raise CorruptPackage("a blob runs past the package's end")
            left -= len(data)
            yield from (_drain(dec, blob.codec, data) if dec else (data,))
        if blob.codec == "zlib":
            yield dec.flush()
    except (zlib.error, lzma.LZMAError) as exc:
        raise CorruptPackage(f"a blob does not decode ({exc})") from None


def _drain(dec, codec: Codec, data: bytes) -> Iterator[bytes]:
    if codec == "zlib":
        piece = dec.decompress(data, CHUNK)
        yield piece
        while dec.unconsumed_tail:
            yield dec.decompress(dec.unconsumed_tail, CHUNK)
        return
    yield dec.decompress(data, max_length=CHUNK)
    while not dec.needs_input and not dec.eof:
        yield dec.decompress(b"", max_length=CHUNK)
