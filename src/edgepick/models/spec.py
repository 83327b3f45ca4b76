"""One entry point: a ModelSpec from a resolved model (a GGUF file or a config.json)."""

from __future__ import annotations

import os
from functools import lru_cache

from edgepick.models.gguf_info import gguf_spec
from edgepick.models.hf_config import hf_config_spec
from edgepick.models.remote_spec import remote_spec
from edgepick.records.model import ModelSpec
from edgepick.records.model_ref import ModelRef


def load_spec(model: ModelRef | str) -> ModelSpec:
    """`model`: a ModelRef, or a path the program already holds (never a name to resolve)."""
    if isinstance(model, ModelRef) and model.remote is not None:
        return remote_spec(model.remote)  # the header read where the file lives
    if isinstance(model, ModelRef):
        model = model.local_path("a served model has no readable file; give a GGUF or config.json")
    if model.endswith(".json"):
        return hf_config_spec(model)

    return gguf_spec(model)


@lru_cache(maxsize=64)
def _spec_at(path: str, size: int, mtime_ns: int) -> ModelSpec:
    return load_spec(path)


def spec_of(path: str) -> ModelSpec:
    """The file's ModelSpec, read once per process per file version (header reads are slow)."""
    st = os.stat(path)
    return _spec_at(os.path.realpath(path), st.st_size, st.st_mtime_ns)


def ref_spec(model: ModelRef) -> ModelSpec:
    """A resolved model's ModelSpec, read once per process (a remote one from its header)."""
    if model.remote is not None:
        return remote_spec(model.remote)
    return spec_of(str(model.path))
