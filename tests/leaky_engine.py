"""A tiny shim around the real llama.cpp engine that keeps a buffer per generated token: 1 MiB
per 100 tokens, the leak bench's memory-growth check must flag (the real engine must not)."""

from __future__ import annotations

from edgepick.backends.llama_cpp import LlamaCppBackend
from edgepick.bench.measure import measure_sustain

LEAK_PER_TOKEN = 2**20 // 100
_kept: list[bytes] = []


class LeakyLlamaCpp(LlamaCppBackend):
    def generate(self, *args, **kwargs):
        gen = super().generate(*args, **kwargs)
        _kept.append(b"\x01" * (LEAK_PER_TOKEN * gen.generated_tokens))  # touched, so resident
        return gen


def measure_sustain_leaky(candidate: dict, workload: dict) -> dict:
    """bench's sustained worker with the engine swapped for the leaky shim (runs in the worker)."""
    from edgepick.backends import register_backend

    register_backend("llama_cpp", LeakyLlamaCpp)
    return measure_sustain(candidate, workload)
