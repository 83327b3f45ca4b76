"""A remote GGUF downloaded into the registry as a new version: resumable, verified, atomic.

The bytes go to `<registry>/.pulls/<id>.gguf.part` through the update fetcher (range requests
resume a cut transfer or a killed process where it stopped). The whole file must then match the
hub's SHA-256 (its LFS oid) where the hub gave one, and the header fit already read (size and
the header's bytes); only then is it moved, in the same file system, into the version's folder by
`Registry.add_built`, which writes the state last. A pull killed at any point leaves the
registry's state as it was: its partial file sits in `.pulls`, where the next pull goes on.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from edgepick.errors import EdgepickError
from edgepick.progress import Tick
from edgepick.records.model_ref import ModelRef
from edgepick.records.remote import RemotePart
from edgepick.registry.store import Registry, VersionEntry, check_gguf
from edgepick.update.fetch import fetch

PULLS = ".pulls"


def staging(registry: Registry, part: RemotePart) -> Path:
    """Where a pull of `part` keeps its bytes until they check out (inside the registry, so the
    finished file moves into place without a copy)."""
    folder = registry.root / PULLS
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(part.identity.encode()).hexdigest()[:16]
    return folder / f"{key}.gguf"


def header_check(part: RemotePart, shown: str):
    """The downloaded file is the one whose header fit read: its size, its header's bytes."""

    def check(path: Path) -> None:
        size = path.stat().st_size
        if size != part.size:
            raise EdgepickError(f"{shown}: downloaded {size:,} bytes, the header read said "
                                f"{part.size:,}; refusing the download")
        with open(path, "rb") as got, open(part.header, "rb") as read:
            if got.read(part.header_bytes) != read.read(part.header_bytes):
                raise EdgepickError(f"{shown}: the downloaded header differs from the one read "
                                    "before (the file changed on the server); run the pull again")
        check_gguf(path)

    return check


def pull(registry: Registry, ref: ModelRef, name: str, version: str,
         headers: dict[str, str] | None = None, progress: Tick | None = None) -> VersionEntry:
    """Download `ref` (a remote ModelRef, its header already read) as `name@version`."""
    remote = ref.remote
    if remote is None:
        raise EdgepickError(f"{ref.spec}: not a remote GGUF (a URL or an hf: reference)")
    if len(remote.parts) > 1:
        raise EdgepickError(f"{remote.ref}: a split GGUF of {len(remote.parts)} parts; the "
                            "registry keeps one file per version (llama.cpp's llama-gguf-split "
                            "--merge joins downloaded parts into one)")
    entry = registry.state().models.get(name)
    if entry is not None and version in entry.versions:
        raise EdgepickError(f"{name}@{version} is already in the registry; pull it as a new "
                            "version instead of replacing one")
    part = remote.parts[0]
    dest = staging(registry, part)
    got = fetch(part.url, dest, sha256=part.sha256, progress=progress, headers=headers,
                check=header_check(part, remote.ref))
    filename = unquote(os.path.basename(urlsplit(part.url).path)) or f"{name}.gguf"
    origin = f"pulled from {remote.ref}" + (f" (sha256 {part.sha256})" if part.sha256 else "")
    return registry.add_built(name, version, filename, lambda tmp: os.replace(got, tmp),
                              origin=origin)
