"""Fetching a file over HTTP with resume: the bytes go to `DEST.part`; a transfer cut off (a
dropped connection, a killed process) goes on from where it stopped with a range request
(`Range: bytes=N-`, answered 206 from byte N), and a server that ignores ranges (200) starts the
file again. The file is used only once it checks out: an update package's own digest
(update/package.py) by default, or the caller's check (a pulled model's header), plus the
SHA-256 the caller expects, when given; a bad download is deleted and refused. Headers the
caller adds (a hub's token) are dropped by httpx when a redirect leaves their origin."""

from __future__ import annotations

import hashlib
import os
import re
import time
from pathlib import Path
from typing import Callable

import httpx

from edgepick.errors import EdgepickError
from edgepick.progress import ProgressEvent, Tick
from edgepick.update.package import CorruptPackage, read_index

RANGE_RE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def cache_path(url: str) -> Path:
    """Where a package fetched from `url` is kept (so a second try resumes it)."""
    root = Path(os.environ.get("EDGEPICK_CACHE", Path.home() / ".cache" / "edgepick"))
    name = re.sub(r"[^A-Za-z0-9._-]", "_", url.rstrip("/").rsplit("/", 1)[-1])[:80] or "update"
    key = hashlib.sha256(url.encode()).hexdigest()[:12]
    folder = root / "updates"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{key}-{name}"


def _get(url: str, part: Path, timeout: float, progress: Tick | None,
         extra: dict[str, str] | None = None) -> None:
    have = part.stat().st_size if part.exists() else 0
    headers = dict(extra or {})
    if have:
        headers["Range"] = f"bytes={have}-"
    with httpx.stream("GET", url, headers=headers, timeout=timeout,
                      follow_redirects=True) as r:
        if r.status_code == 416 and have:  # asked past the end: we had it all already
            return
        if r.status_code == 206:
            m = RANGE_RE.match(r.headers.get("content-range", ""))
            if not m or int(m.group(1)) != have:
                raise EdgepickError(f"{url}: answered a range that does not start at byte {have}")
            total = int(m.group(3)) if m.group(3) != "*" else None
            mode = "ab"
        elif r.status_code == 200:  # no range support (or nothing to resume): from the start
            have, mode = 0, "wb"
            total = int(r.headers["content-length"]) if "content-length" in r.headers else None
        else:
            raise EdgepickError(f"{url} answered HTTP {r.status_code}")
        with open(part, mode) as fh:
            for block in r.iter_bytes():  # as it arrives: a cut keeps every byte received
                fh.write(block)
                have += len(block)
                if progress:
                    progress(ProgressEvent(have, total or have, "bytes"))
            fh.flush()
            os.fsync(fh.fileno())


def fetch(url: str, dest: Path | None = None, *, sha256: str | None = None,
          timeout: float = 60.0, attempts: int = 8, progress: Tick | None = None,
          headers: dict[str, str] | None = None,
          check: Callable[[Path], None] = read_index) -> Path:
    """Download `url` to `dest` (default: the cache), resuming; returns the verified path.
    `check(path)` raises when the file is not what was asked for (default: an update
    package's digest)."""
    dest = dest or cache_path(url)
    if dest.is_file():
        try:
            _verify(dest, sha256, check)
            return dest
        except EdgepickError:
            dest.unlink()
    part = dest.with_name(dest.name + ".part")
    last: Exception | None = None
    for attempt in range(attempts):
        try:
            _get(url, part, timeout, progress, headers)
            break
        except (httpx.TransportError, httpx.StreamError) as exc:  # cut off: resume
            last = exc
            time.sleep(min(0.2 * 2 ** attempt, 5.0))
    else:
        raise EdgepickError(f"{url}: the download failed {attempts} times ({last}); run the "
                            f"command again to resume from {part.stat().st_size if part.exists() else 0} bytes")
    try:
        _verify(part, sha256, check)
    except EdgepickError:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, dest)
    return dest


def _verify(path: Path, sha256: str | None, check: Callable[[Path], None]) -> None:
    if sha256:
        with open(path, "rb") as fh:
            got = hashlib.file_digest(fh, "sha256").hexdigest()
        if got != sha256.lower():
            raise CorruptPackage(f"{path}: SHA-256 {got[:12]}…, expected {sha256[:12]}…; "
                                 "refusing the download")
    check(path)  # the package's own digest, or the caller's check
