"""A candidate: one model file run by one backend with fixed runtime settings."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, Field


class RuntimeSettings(BaseModel):
    threads: int = 2
    n_ctx: int = 2048
    n_batch: int = 512
    n_ubatch: int = 512
    kv_type: str = "f16"  # f16 | q8_0 | q4_0 (llama.cpp cache types)
    flash_attn: bool = True
    # Sliding-window layers keep only their window (as llama-server does), not the full context.
    swa_full: bool = False
    seed: int = 42
    mmap: bool = True

    def key_dict(self) -> dict:
        return self.model_dump()


class Candidate(BaseModel):
    """`model` is a file path for in-process engines, or a URL (`http://host:port/v1#name`)."""

    model: str
    backend: str = "llama_cpp"
    settings: RuntimeSettings = Field(default_factory=RuntimeSettings)
    label: str | None = None

    @property
    def name(self) -> str:
        return self.label or self.model.rsplit("/", 1)[-1]

    def content_key(self, *extra: object) -> str:
        """Hash of the model's content identity, the settings and whatever else is named."""
        from edgepick.store.identity import model_identity

        payload = {
            "model": model_identity(self.model),
            "backend": self.backend,
            "settings": self.settings.key_dict(),
            "extra": [e.model_dump() if isinstance(e, BaseModel) else e for e in extra],
        }
        blob = json.dumps(payload, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:32]
