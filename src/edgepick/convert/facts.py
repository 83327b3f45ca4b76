"""What a converted folder tells the decision: its weight format, size and conversion cost
(seed 000 §3.2 layer four, seed 003 §4.3: conversion steps and risks are an engineering cost)."""

from __future__ import annotations

from pathlib import Path

from edgepick.convert.recipe import KNOWN_PITFALLS, ConvertRecord
from edgepick.convert.run import previous_record


def conversion_record(model: str) -> ConvertRecord | None:
    return previous_record(Path(model))


def quant_name(rec: ConvertRecord) -> str:
    return "INT4" if rec.recipe.precision == "int4" else rec.recipe.precision.upper()


def folder_facts(s) -> None:
    """Fill a CandidateSummary's quant, weights bytes and source facts from the folder's record."""
    rec = conversion_record(s.model)
    if rec is None:
        s.notes.append("engine folder without edgepick_convert.json: conversion cost unknown")
        return
    s.quant = s.quant or quant_name(rec)
    s.weights_bytes = s.weights_bytes or rec.size_bytes
    s.requantized = rec.requantized
    s.notes.append(f"converted in {rec.seconds:.0f} s, {len(rec.steps)} steps "
                   f"({rec.recipe.engine} {rec.recipe.precision}, block {rec.recipe.block_size}, "
                   f"{rec.recipe.algo})")


def pitfalls_of(rec: ConvertRecord) -> list[str]:
    """The known pitfalls that bear on this build (the warnings it got, and the builder's)."""
    out = list(rec.warnings)
    if rec.recipe.route == "gguf":
        out.append(KNOWN_PITFALLS["builder-gguf-type"] + " (avoided: torch-free route)")
    return out
