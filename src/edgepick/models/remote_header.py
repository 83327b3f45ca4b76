"""A remote GGUF's header, read with range requests and cached.

The first range is 1 MiB; while the header's layout (gguf_extent.py) runs past the bytes held,
the next range asks for the rest (at least as much again), so a 262k-token vocabulary costs a
few requests and a small header one. The header is written to a sparse stand-in of the file's
full size (the bytes at their offsets, holes after them), which the one GGUF reader
(gguf_info.py) parses as a file on disk: the figures are those of the downloaded file, and the
stand-in takes the header's bytes on disk.

The cache is keyed by URL; an entry names the content by ETag (else size and Last-Modified) and
is used without any request for `MAX_AGE_S`, then revalidated with a 4-byte request: an
unchanged identity keeps the header, a changed one reads it again.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from edgepick.errors import EdgepickError
from edgepick.models.gguf_extent import NeedMore, header_extent
from edgepick.models.gguf_info import read_gguf
from edgepick.models.remote_http import RangeAnswer, RemoteError, get_range, offline
from edgepick.records.remote import RemotePart

FIRST_RANGE = 1 << 20
MAX_HEADER = 1 << 30  # a header over 1 GiB is not a model's
MAX_AGE_S = 24 * 3600


@dataclass
class Traffic:
    """What one resolution cost: requests made and bytes read."""

    requests: int = 0
    bytes_read: int = 0

    def add(self, answer: RangeAnswer) -> RangeAnswer:
        self.requests += 1
        self.bytes_read += len(answer.data)
        return answer


def cache_dir() -> Path:
    root = Path(os.environ.get("EDGEPICK_CACHE", Path.home() / ".cache" / "edgepick"))
    folder = root / "remote"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def _index(url: str) -> Path:
    return cache_dir() / f"{_digest(url)}.json"


def cached(url: str) -> RemotePart | None:
    """The cached header of `url`, whatever its age (None when there is none)."""
    try:
        entry = json.loads(_index(url).read_text(encoding="utf-8"))
        part = RemotePart.model_validate(entry["part"])
    except (OSError, ValueError, KeyError):
        return None
    if not Path(part.header).is_file() or os.path.getsize(part.header) != part.size:
        return None
    return part


def _fresh(url: str) -> bool:
    try:
        checked = json.loads(_index(url).read_text(encoding="utf-8")).get("checked", 0)
    except (OSError, ValueError):
        return False
    return time.time() - float(checked) < MAX_AGE_S


def _remember(part: RemotePart) -> None:
    index = _index(part.url)
    tmp = index.with_name(index.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"part": part.model_dump(mode="json"), "checked": time.time()}),
                   encoding="utf-8")
    os.replace(tmp, index)


def _same(part: RemotePart, answer: RangeAnswer) -> bool:
    if part.size != answer.size:
        return False
    if part.etag or answer.etag:
        return part.etag == answer.etag
    return part.last_modified == answer.last_modified


def read_header(http: httpx.Client, url: str, shown: str, traffic: Traffic,
                sha256: str | None = None) -> RemotePart:
    """The header of the GGUF at `url` (`shown`: how errors name it), from the cache when it
    is there and fresh (or when offline), else read with range requests."""
    have = cached(url)
    if have is not None and (offline() or _fresh(url)):
        return have
    if have is not None:
        probe = traffic.add(get_range(http, url, 0, 3, shown))
        if _same(have, probe):
            _remember(have)
            return have
    first = traffic.add(get_range(http, url, 0, FIRST_RANGE - 1, shown))
    data = bytearray(first.data)
    while True:
        try:
            end = header_extent(bytes(data))
            break
        except NeedMore as more:
            if more.at_least > first.size:
                raise RemoteError(f"{shown}: truncated GGUF: its header needs more than "
                                  f"{more.at_least:,} bytes and the file has {first.size:,}"
                                  ) from None
            if more.at_least > MAX_HEADER:
                raise RemoteError(f"{shown}: a header over {MAX_HEADER:,} bytes; not reading "
                                  "on") from None
            stop = min(first.size, max(more.at_least, 2 * len(data))) - 1
            answer = traffic.add(get_range(http, url, len(data), stop, shown))
            if not answer.data:
                raise RemoteError(f"{shown}: the server sent nothing for bytes "
                                  f"{len(data)}-{stop}") from None
            data += answer.data
        except EdgepickError as exc:
            raise RemoteError(f"{shown}: {exc}") from None
    part = RemotePart(url=url, size=first.size, etag=first.etag,
                      last_modified=first.last_modified, sha256=sha256, header_bytes=end,
                      header="")
    part = part.model_copy(update={"header": str(_stand_in(part, bytes(data), shown))})
    _remember(part)
    if have is not None and have.header != part.header:
        Path(have.header).unlink(missing_ok=True)
    return part


def restore(part: RemotePart, data: bytes) -> RemotePart:
    """`part` with its stand-in in this cache, written again from its header's bytes when the
    cache does not hold it (a pinned reference, read offline)."""
    path = cache_dir() / f"{_digest(part.url, part.identity)}.gguf"
    if not (path.is_file() and os.path.getsize(path) == part.size):
        path = _stand_in(part, data, part.url)
    return part.model_copy(update={"header": str(path)})


def _stand_in(part: RemotePart, data: bytes, shown: str) -> Path:
    """The sparse file of the part's size with its first bytes; checked by the GGUF reader."""
    path = cache_dir() / f"{_digest(part.url, part.identity)}.gguf"
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.truncate(part.size)
    allocated = os.stat(tmp).st_blocks * 512
    if allocated > len(data) + (16 << 20):  # the file system filled the holes
        tmp.unlink()
        raise RemoteError(f"{shown}: the cache's file system ({cache_dir()}) has no sparse "
                          "files; set EDGEPICK_CACHE to a folder on one that has")
    try:
        read_gguf(tmp)
    except EdgepickError as exc:
        tmp.unlink()
        raise RemoteError(str(exc).replace(str(tmp), shown)) from None
    os.replace(tmp, path)
    return path
