"""A model as the user named it → a `ModelRef`, resolved once where input enters.

A path (relative to the plan's folder when given), a bundled name, or
`http(s)://host:port/v1#model-name` (with the name of the variable holding its API key). A GGUF named for the onnxruntime-genai engine is converted
here (cached), because an engine accepts only its own format and never converts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from edgepick.backends.registry import engine_for
from edgepick.errors import EdgepickError
from edgepick.inputs.bundled import BUNDLED
from edgepick.inputs.remote import is_remote, resolve_remote
from edgepick.records.model_ref import ModelRef

OG_BACKEND = "onnxruntime_genai"


def engine_of(path: str) -> str:
    """The engine a model on disk is in: the registered engine that claims the file or folder
    (`Backend.claims`: an onnxruntime-genai folder by its genai_config.json, a GGUF by its magic,
    a plugin's own format), llama.cpp when none does."""
    return engine_for(path)


def _own_format(path: str, backend: str) -> str:
    """The file or folder `backend` loads for `path`: a GGUF given to onnxruntime-genai is
    converted once with the default recipe (docs/engines.md)."""
    if backend != OG_BACKEND or engine_of(path) == OG_BACKEND:
        return path
    if os.path.isfile(path) and path.endswith(".gguf"):
        from edgepick.convert.cache import converted

        return os.path.realpath(converted(path))
    raise EdgepickError(f"{path}: not an onnxruntime-genai folder (no genai_config.json) "
                        "and not a GGUF to convert")


def _config_label(path: str) -> str:
    """A Hugging Face config.json names its model by `_name_or_path` (a hub id or the folder it
    was saved from: its last part), else by the folder it sits in; "config.json" names nothing."""
    try:
        with open(path, encoding="utf-8") as fh:
            name = json.load(fh).get("_name_or_path")
    except (OSError, ValueError, AttributeError):
        name = None
    if isinstance(name, str) and name.strip("/ "):
        return os.path.basename(name.strip().rstrip("/"))
    return os.path.basename(os.path.dirname(path)) or "config.json"


def resolve_ref(spec: str, *, backend: str | None = None, label: str | None = None,
                base_dir: str | Path | None = None, api_key_env: str | None = None,
                remote_ok: bool = False) -> ModelRef:
    """Resolve what a user typed. The engine defaults by kind: `openai_http` for endpoints,
    otherwise the engine of the file on disk (`engine_of`). `api_key_env` names the variable
    holding an endpoint's key; only an endpoint takes one. A remote GGUF (a .gguf URL, an
    `hf:` reference) is read header-only, where the caller says it needs no more
    (`remote_ok`: inspect, fit, doctor's static checks, a plan's fit)."""
    if is_remote(spec):
        if not remote_ok:
            raise EdgepickError(f"{spec}: a remote GGUF; this command runs the model, so it "
                                f"needs the file: `edgepick models pull {spec} --registry DIR` "
                                "downloads it (inspect and fit read its header where it is)")
        if api_key_env:
            raise EdgepickError(f"{spec}: an API key variable ({api_key_env}) goes with an "
                                "endpoint; a hub's token is read from HF_TOKEN")
        return resolve_remote(spec, backend=backend, label=label)
    if "://" in spec:
        return ModelRef.endpoint(spec, backend=backend, label=label, api_key_env=api_key_env)
    if api_key_env:
        raise EdgepickError(f"{spec}: an API key variable ({api_key_env}) goes with an endpoint, "
                            "http(s)://host:port/v1#model-name, not a file or bundled model")
    candidate = Path(spec).expanduser()
    if base_dir is not None and not candidate.is_absolute():
        candidate = Path(base_dir) / candidate
    if candidate.exists():
        kind, path = "file", os.path.realpath(candidate)
        stem = os.path.basename(path.rstrip("/"))
        default_label = (_config_label(path) if stem == "config.json" else
                         stem[:-5] if stem.endswith(".gguf") else stem)
    elif spec in BUNDLED:
        kind, path, default_label = "bundled", os.path.realpath(BUNDLED[spec]()), spec
    else:
        raise EdgepickError(f"{spec}: no such file, and not a bundled model "
                            f"(bundled: {', '.join(BUNDLED)})")
    backend = backend or engine_of(path)
    return ModelRef(kind=kind, spec=spec, path=_own_format(path, backend), backend=backend,
                    label=label or default_label)
