"""The served models as Ollama lists them: `/api/tags` (every model this server can answer
with), `/api/ps` (the loaded ones, their memory and when they unload), `/api/show` (one
model's details, template and capabilities). Details come from each GGUF's header.

`size` is what serve counts against the memory budget (a team's measured need, else the file
plus the engine's anonymous memory); `size_vram` is 0: serve's engines run on the CPU. The
`digest` names the served file (path, size, time, version), not an Ollama manifest."""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

from edgepick.errors import EdgepickError
from edgepick.models.gguf_info import gguf_spec, read_gguf

FOREVER = timedelta(days=365 * 292)  # Ollama's "never": now plus the largest Go duration


@dataclass
class Served:
    name: str
    spec: Any  # EngineSpec
    embedding: bool
    state: str  # loaded, loading, unloaded, ...
    size: int
    pinned: bool
    ttl: float | None
    last_used: float | None  # time.monotonic()


@lru_cache(maxsize=32)
def _header(path: str, mtime: float) -> tuple[dict, str | None]:
    try:
        spec = gguf_spec(path)
        tmpl = read_gguf(path).fields.get("tokenizer.chat_template")
        template = tmpl.contents() if tmpl is not None else None
    except EdgepickError:
        return {}, None
    return {"architecture": spec.architecture, "n_params": spec.n_params,
            "file_type": spec.file_type or "", "context_length": spec.context_length,
            "n_embd": spec.n_embd, "n_layers": spec.n_layers}, template


def header(path: str) -> tuple[dict, str | None]:
    try:
        return _header(path, os.path.getmtime(path))
    except OSError:
        return {}, None


def _params(n: int) -> str:
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M" if n >= 1e6 else str(n)


def details(path: str) -> dict:
    h, _ = header(path)
    arch = h.get("architecture", "")
    return {"parent_model": "", "format": "gguf", "family": arch,
            "families": [arch] if arch else None,
            "parameter_size": _params(h["n_params"]) if h else "",
            "quantization_level": h.get("file_type", "")}


def digest(spec: Any) -> str:
    try:
        st = os.stat(_path(spec))
        ident = f"{_path(spec)}\0{st.st_size}\0{st.st_mtime_ns}\0{spec.version}"
    except OSError:
        ident = f"{_path(spec)}\0{spec.version}"
    return hashlib.sha256(ident.encode()).hexdigest()


def served(pool: Any) -> list[Served]:
    """Every model of this server: a team's members with their residency, or the one pool's
    model; then the embedding engine."""
    out = []
    residency = getattr(pool, "residency", None)
    if residency is not None:
        for name, r in residency.models.items():
            out.append(Served(name, pool.members[name].spec, False, pool.state_of(name),
                              r.need, r.pin, r.ttl, r.last_used))
    else:
        spec = pool.spec
        size = _file_size(_path(spec)) + int(getattr(pool, "last_memory", 0) or 0)
        out.append(Served(spec.name, spec, False, "loaded" if pool.ready else pool.status,
                          size, True, None, None))
    embedder = pool.embedder
    if embedder is not None:
        spec = embedder.spec
        size = _file_size(_path(spec)) + int(getattr(embedder, "last_memory", 0) or 0)
        out.append(Served(spec.name, spec, True, "loaded" if embedder.ready else "loading",
                          size, True, None, None))
    return out


def _path(spec: Any) -> str:
    return str(getattr(spec, "path", "") or "")


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def find(pool: Any, model: str) -> Served | None:
    """The served model a client names: NAME, NAME:latest or NAME@VERSION."""
    for s in served(pool):
        if model in (s.name, f"{s.name}:latest", f"{s.name}@{s.spec.version}"):
            return s
    return None


def _iso(dt: datetime) -> str:
    return dt.isoformat(timespec="microseconds").replace("+00:00", "Z")


def modified_at(spec: Any) -> str:
    try:
        return _iso(datetime.fromtimestamp(os.path.getmtime(_path(spec)), timezone.utc))
    except OSError:
        return _iso(datetime.now(timezone.utc))


def tag(s: Served) -> dict:
    return {"name": s.name, "model": s.name, "modified_at": modified_at(s.spec),
            "size": _file_size(_path(s.spec)), "digest": digest(s.spec),
            "details": details(_path(s.spec))}


def expires_at(s: Served) -> str:
    now = datetime.now(timezone.utc)
    if s.pinned or s.ttl is None or s.last_used is None:
        return _iso(now + FOREVER)
    idle = max(time.monotonic() - s.last_used, 0.0)
    return _iso(now + timedelta(seconds=max(s.ttl - idle, 0.0)))


def process(s: Served) -> dict:
    return {"name": s.name, "model": s.name, "size": s.size, "digest": digest(s.spec),
            "details": details(_path(s.spec)), "expires_at": expires_at(s), "size_vram": 0,
            "context_length": s.spec.runtime.n_ctx, "pinned": s.pinned}


def show(s: Served) -> dict:
    h, template = header(_path(s.spec))
    arch = h.get("architecture", "")
    info = {"general.architecture": arch, "general.parameter_count": h.get("n_params", 0),
            "general.file_type": h.get("file_type", "")}
    if arch:
        info.update({f"{arch}.context_length": h["context_length"],
                     f"{arch}.embedding_length": h["n_embd"],
                     f"{arch}.block_count": h["n_layers"]})
    # "tools": the model's own template writes tool calls; any chat model calls them when made
    # to (x-edgepick-tool-choice, serve/pool/tool_choice.py)
    caps = ["embedding"] if s.embedding else ["completion"] + (
        ["tools"] if template and "tool_calls" in template else [])
    return {"modelfile": f"# served by edgepick from {os.path.basename(_path(s.spec))}\n"
                         f"FROM {os.path.basename(_path(s.spec))}\n",
            "parameters": f"num_ctx {s.spec.runtime.n_ctx}", "template": template or "",
            "details": details(_path(s.spec)), "model_info": info, "capabilities": caps,
            "modified_at": modified_at(s.spec)}
