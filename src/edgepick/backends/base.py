"""The Backend protocol and the registry of engines.

Shared code asks the registry for an engine by name and talks to it only through this protocol,
so adding an engine never touches the stages.
"""

from __future__ import annotations

import importlib
from typing import Callable, ClassVar, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, Field

from edgepick.errors import EdgepickError
from edgepick.records.candidate import Candidate

# Engines live in their own modules; importing them registers them.
_ENGINE_MODULES = {
    "llama_cpp": "edgepick.backends.llama_cpp",
    "openai_http": "edgepick.backends.openai_http",
}
_REGISTRY: dict[str, type] = {}


class Generation(BaseModel):
    """One generation with its timings, all in seconds from the moment the request was submitted."""

    text: str
    prompt_tokens: int
    generated_tokens: int
    token_times: list[float] = Field(default_factory=list)  # arrival time of each generated token
    prefill_s: float | None = None  # time to process the prompt (engine-side when known)
    finish_reason: str = "length"  # "length" | "stop"
    token_logprobs: list[float] | None = None  # log-probability of each generated token, if asked

    @property
    def ttft_s(self) -> float | None:
        return self.token_times[0] if self.token_times else None

    @property
    def e2e_s(self) -> float | None:
        return self.token_times[-1] if self.token_times else None

    @property
    def decode_tps(self) -> float | None:
        """Tokens after the first ÷ time after the first."""
        if len(self.token_times) < 2:
            return None
        span = self.token_times[-1] - self.token_times[0]
        return (len(self.token_times) - 1) / span if span > 0 else None


@runtime_checkable
class Backend(Protocol):
    name: ClassVar[str]

    def load(self, candidate: Candidate) -> float:
        """Load the model; return load time in seconds."""

    def generate(self, prompt: str | list[dict], max_tokens: int, *, chat: bool = False,
                 stop: list[str] | None = None, logprobs: bool = False,
                 ignore_eos: bool = False) -> Generation:
        """Greedy generation; a list of messages is rendered with the model's chat template."""

    def tokenize(self, text: str, add_bos: bool = True) -> list[int]:
        """The model's own tokenization."""

    def logits(self, tokens: list[int]) -> np.ndarray:
        """Next-token logits at every position of one sequence, shape (len(tokens), n_vocab)."""

    def unload(self) -> None:
        """Free the model and its state."""


def register_backend(name: str) -> Callable[[type], type]:
    def deco(cls: type) -> type:
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def backend_names() -> list[str]:
    return sorted(set(_ENGINE_MODULES) | set(_REGISTRY))


def get_backend(name: str) -> Backend:
    if name not in _REGISTRY and name in _ENGINE_MODULES:
        importlib.import_module(_ENGINE_MODULES[name])
    if name not in _REGISTRY:
        raise EdgepickError(f"unknown backend '{name}'; known: {', '.join(backend_names())}")
    return _REGISTRY[name]()
