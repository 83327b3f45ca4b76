"""Engineering cost from facts the tool knows (seed 000 §2.5, §3.2 layer four, §7.2 step 2).

Scores are in [0, 1], 1 = cheapest to ship. They are judgements, stated here so a user can edit
them; each has its reason next to it.
"""

from __future__ import annotations

from edgepick.backends.registry import maturity
from edgepick.models.quant_types import FTYPE_BASE
from edgepick.models.quant_types import facts as quant_facts
from edgepick.records.decision import CandidateSummary

# Backend maturity: how much of the model's path to the device is already proven. Each engine
# declares its own, with its reason (`Backend.maturity`, backends/); an engine that cannot run
# the model at all never gets here: fit, bench and run refuse it first (registry.check_support).
UNKNOWN_BACKEND = 0.5

# Formats that are not ggml types: ONNX MatMulNBits INT4 runs on ONNX Runtime's CPU, CUDA,
# DirectML and WebGPU kernels. A ggml type's support is its row of models/quant_types.QUANT_FACTS.
FORMAT_SUPPORT = {"INT4": 0.9}
K_QUANT = 0.8
LOW_BIT = 0.6


def format_support(quant: str | None) -> float | None:
    if not quant:
        return None
    q = quant.upper()
    if q in FORMAT_SUPPORT:
        return FORMAT_SUPPORT[q]
    row = quant_facts(FTYPE_BASE.get(q, q))
    if row is not None:
        return row.edge_support
    if q.startswith(("IQ", "Q2", "Q3", "TQ")):
        return LOW_BIT
    if "_K" in q:
        return K_QUANT
    return UNKNOWN_BACKEND


def engineering_facts(s: CandidateSummary) -> dict[str, float | None]:
    """Per-fact scores; the engineering layer is their mean (None facts are left out)."""
    facts: dict[str, float | None] = {
        "backend_maturity": maturity(s.backend, UNKNOWN_BACKEND),
        "format_support": format_support(s.quant),
        # Each tensor that fell back to another type is a place the build differs from the recipe.
        "no_fallbacks": max(0.5, 1.0 - 0.05 * len(s.fallbacks)),
        # Requantizing an already quantized file compounds error (docs/quantize.md).
        "source_quality": None if s.requantized is None else (0.6 if s.requantized else 1.0),
    }
    return facts


def difficulty(s: CandidateSummary) -> str:
    """Conversion difficulty for the §7.3 table: low / medium / high."""
    vals = [v for v in engineering_facts(s).values() if v is not None]
    score = sum(vals) / len(vals) if vals else 0.5
    return "low" if score >= 0.9 else "medium" if score >= 0.7 else "high"
