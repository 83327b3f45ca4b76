"""`edgepick update apply OLD UPDATE -o NEW`: rebuild NEW byte for byte.

Before a byte is written, the package is checked against the digest it ends with and OLD
against the base the package names (its SHA-256 and size): a corrupt package or a wrong base is
refused in one line. NEW is then streamed into a temporary file beside the output, in pieces of
at most 1 MiB (memory stays a few MiB whatever the model's size): literal blobs decoded, base
fields and tensors copied from their recorded offsets and checked against their SHA-256 on the
way, padding written as zeros. Only a whole file whose SHA-256 is the package's NEW is renamed
into place (then the directory is fsynced); any failure removes the temporary file.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np

from edgepick.errors import EdgepickError
from edgepick.progress import ProgressEvent, Tick
from edgepick.update.package import CHUNK, CorruptPackage, Index, Segment, decode, read_index

ZEROS = bytes(CHUNK)


class WrongBase(EdgepickError):
    """The package was made for another base file."""


def check_base(index: Index, base: Path, package: Path) -> None:
    size = base.stat().st_size
    want = index.base
    if size == want.size:
        with open(base, "rb") as fh:
            got = hashlib.file_digest(fh, "sha256").hexdigest()
        if got == want.sha256:
            return
    else:
        got = "size %d" % size
    raise WrongBase(f"{package} updates {want.name or 'a base'} (sha256 {want.sha256[:12]}…, "
                    f"{want.size} bytes); {base} is not it ({got[:12]}…); refusing it, nothing "
                    "was written")


def _base_bytes(fh: BinaryIO, seg: Segment) -> Iterator[bytes]:
    """The referenced base bytes, checked against the segment's SHA-256."""
    assert seg.base_offset is not None
    fh.seek(seg.base_offset)
    left, h = seg.length, hashlib.sha256()
    while left:
        block = fh.read(min(CHUNK, left))
        if not block:
            raise WrongBase(f"the base ends inside '{seg.base}'")
        left -= len(block)
        h.update(block)
        yield block
    if h.hexdigest() != seg.sha256:
        raise WrongBase(f"the base's '{seg.base}' does not have the SHA-256 the package expects")


def _pieces(seg: Segment, index: Index, pkg: BinaryIO, base: BinaryIO) -> Iterator[bytes]:
    if seg.kind == "zeros":
        left = seg.length
        while left:
            n = min(CHUNK, left)
            yield ZEROS[:n]
            left -= n
    elif seg.kind in ("kv", "tensor"):
        yield from _base_bytes(base, seg)
    elif seg.kind == "blob":
        yield from decode(pkg, index.blobs[seg.blob or 0])
    else:  # xor: the blob and the base tensor in lockstep
        yield from _xor_stream(decode(pkg, index.blobs[seg.blob or 0]), _base_bytes(base, seg))


def _xor_stream(delta: Iterator[bytes], old: Iterator[bytes]) -> Iterator[bytes]:
    pending = b""
    for piece in delta:
        need = len(piece)
        while len(pending) < need:
            pending += next(old, b"") or _short()
        a, pending = pending[:need], pending[need:]
        yield (np.frombuffer(piece, np.uint8) ^ np.frombuffer(a, np.uint8)).tobytes()
    for rest in old:  # drain, so the base tensor's hash is checked
        pending += rest
    if pending:
        raise CorruptPackage("an XOR blob is shorter than its base tensor")


def _short() -> bytes:
    raise CorruptPackage("an XOR blob is longer than its base tensor")


def apply(base: str | Path, package: str | Path, out: str | Path,
          progress: Tick | None = None, index: Index | None = None) -> str:
    """Write NEW to `out`; returns its SHA-256. `index`: already read and verified."""
    base_p, pkg_p, out_p = Path(base), Path(package), Path(out)
    if not base_p.is_file():
        raise EdgepickError(f"{base_p}: no such file")
    index = index or read_index(pkg_p)
    check_base(index, base_p, pkg_p)
    _remove_stale(out_p)
    tmp = out_p.with_name(out_p.name + f".partial{os.getpid()}")
    whole, written = hashlib.sha256(), 0
    try:
        with open(pkg_p, "rb") as pkg, open(base_p, "rb") as bh, open(tmp, "wb") as dst:
            for i, seg in enumerate(index.segments):
                n = 0
                for piece in _pieces(seg, index, pkg, bh):
                    dst.write(piece)
                    whole.update(piece)
                    n += len(piece)
                if n != seg.length:
                    raise CorruptPackage(f"segment {i} ({seg.name or seg.kind}) gave {n} bytes, "
                                         f"expected {seg.length}")
                written += n
                if progress:
                    progress(ProgressEvent(i + 1, len(index.segments), "segments"))
            dst.flush()
            os.fsync(dst.fileno())
        if written != index.new.size or whole.hexdigest() != index.new.sha256:
            raise CorruptPackage(f"the rebuilt file's SHA-256 is {whole.hexdigest()[:12]}…, the "
                                 f"package promised {index.new.sha256[:12]}…")
        os.replace(tmp, out_p)
        _fsync_dir(out_p.parent)
    except CorruptPackage as exc:
        tmp.unlink(missing_ok=True)
        raise CorruptPackage(f"{pkg_p}: {exc}; refusing it, nothing was written") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return index.new.sha256


def _remove_stale(out: Path) -> None:
    """What an apply killed before its rename left beside `out` (its process gone)."""
    for p in out.parent.glob(out.name + ".partial*"):
        pid = p.name.rsplit(".partial", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            p.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
