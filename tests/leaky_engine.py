"""A tiny shim around the real llama.cpp engine that keeps a buffer per generated token: 1 MiB
per 100 tokens, the leak bench's memory-growth check must flag (the real engine must not).
The `_short` workers run doctor's sustained run (12 s) for a few seconds: a slope is fitted over
every request (bench/sustained.py), the shim's leak shows within a few hundred tokens, and the
real engine's flat line within a dozen requests; the suite pays for each second."""

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


def measure_sustain_leaky_short(candidate: dict, workload: dict) -> dict:
    return measure_sustain_leaky(candidate, {**workload, "sustain_s": 4.0})


def measure_sustain_short(candidate: dict, workload: dict) -> dict:
    """The real engine, unchanged, for 6 s."""
    return measure_sustain(candidate, {**workload, "sustain_s": 6.0})
