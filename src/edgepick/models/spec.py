"""One entry point: a ModelSpec from a GGUF file, a config.json, or a bundled model name."""

from __future__ import annotations

from edgepick.errors import EdgepickError
from edgepick.records.model import ModelSpec


def load_spec(model: str) -> ModelSpec:
    from edgepick.assets import resolve_model

    path = resolve_model(model)
    if "://" in path:
        raise EdgepickError(f"{path}: a served model has no readable file; give a GGUF or config.json")
    if path.endswith(".json"):
        from edgepick.models.hf_config import hf_config_spec

        return hf_config_spec(path)
    from edgepick.models.gguf_info import gguf_spec

    return gguf_spec(path)
