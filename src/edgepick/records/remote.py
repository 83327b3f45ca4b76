"""A GGUF that lives on a server, as read from its header alone: data only.

Each part (a split GGUF has several, `-00001-of-0000N.gguf`) is named by its URL and the
identity the server gave it (ETag, else size and Last-Modified; the hub's LFS SHA-256 when it
lists one). `header` is the local stand-in the header was written to: a sparse file of the
part's full size holding the header bytes, so the GGUF reader parses it as it parses a file on
disk, and no weight is ever read from it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class RemotePart(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str  # where the bytes are (the hub's resolve URL; never a token)
    size: int
    etag: str | None = None
    last_modified: str | None = None
    sha256: str | None = None  # the hub's LFS oid, when it lists one
    header_bytes: int  # bytes the header and tensor index take
    header: str  # the local sparse stand-in

    @property
    def identity(self) -> str:
        """What names this content: the LFS SHA-256, else the ETag, else size + Last-Modified."""
        if self.sha256:
            return f"sha256:{self.sha256}"
        if self.etag:
            return f"{self.url}#etag:{self.etag}"
        return f"{self.url}#size:{self.size}:{self.last_modified or ''}"


class RemoteFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ref: str  # as the user wrote it (hf:ORG/REPO/FILE.gguf@REV or a URL)
    parts: list[RemotePart]
    requests: int = 0  # HTTP requests this resolution made (0: answered from the cache)
    bytes_read: int = 0  # bytes those requests read

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts)

    @property
    def identity(self) -> str:
        return "remote:" + "|".join(p.identity for p in self.parts)
