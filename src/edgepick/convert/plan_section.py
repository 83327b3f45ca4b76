"""The plan's `convert:` section: one model built for another engine at several INT4 block sizes
(seed 001 §4 group-wise INT4; seed 003 §4.3 the engine as an axis of the choice).

    convert:
      - source: smollm2-f16          # a GGUF (F16 best); also the fidelity reference
        engine: onnxruntime-genai
        block_sizes: [32, 128]       # the sweep: one candidate per block size
        algo: k_quant

Each build becomes a candidate run by the `onnxruntime_genai` backend, measured by bench, eval and
fidelity like every other; the convert stage builds them (reused when already built).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from edgepick.convert.cache import tag
from edgepick.convert.recipe import BACKEND, BLOCK_SIZES, ConvertRecipe
from edgepick.errors import EdgepickError
from edgepick.records.model_ref import ModelRef


class ConvertEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str  # GGUF path or bundled name
    engine: Literal["onnxruntime-genai"] = "onnxruntime-genai"
    block_sizes: list[int] = Field(default_factory=lambda: [32])
    algo: Literal["k_quant", "default"] = "k_quant"
    lm_head_bits: Literal[4, 8] = 4
    context_length: int = Field(4096, ge=16)
    label: str | None = None  # prefix of the candidates' names; default: the source's stem
    reference: str | None = None  # fidelity reference; default: the source itself

    @field_validator("block_sizes")
    @classmethod
    def _sizes(cls, v: list[int]) -> list[int]:
        bad = [b for b in v if b not in BLOCK_SIZES]
        if not v or bad:
            raise ValueError(f"expected block sizes among {', '.join(map(str, BLOCK_SIZES))}")
        return v

    def recipes(self) -> list[ConvertRecipe]:
        return [ConvertRecipe(block_size=b, algo=self.algo, lm_head_bits=self.lm_head_bits,
                              context_length=self.context_length) for b in self.block_sizes]


class PlannedBuild(BaseModel):
    """What the convert stage builds for one candidate."""

    source: str  # resolved GGUF path
    recipe: ConvertRecipe
    out: str


def check_convert(plan, lp, fail) -> None:
    """Plan checks for the section (called by plan/semantic_checks.py)."""
    for i, entry in enumerate(plan.convert):
        try:
            ref = lp.ref(entry.source)
        except EdgepickError as exc:
            fail(("convert", i, "source"), str(exc))
        if ref.is_endpoint or not str(ref.path).endswith(".gguf"):
            fail(("convert", i, "source"), "a conversion source must be a local GGUF")
        if entry.reference:
            try:
                lp.ref(entry.reference)
            except EdgepickError as exc:
                fail(("convert", i, "reference"), str(exc))


def convert_candidates(lp, make) -> list:
    """One candidate per build: `make(name=, ref=, reference=, build=)` builds the plan's
    candidate record; the folder is written under the plan's output/models."""
    out = []
    for entry in lp.plan.convert:
        src = lp.ref(entry.source)
        prefix = entry.label or src.label
        for recipe in entry.recipes():
            name = f"{prefix}-{tag(recipe)}"
            folder = lp.output / "models" / name
            out.append(make(name=name, ref=ModelRef.file(folder, backend=BACKEND, label=name),
                            reference=lp.ref(entry.reference) if entry.reference else src,
                            build=PlannedBuild(source=str(src.path), recipe=recipe,
                                               out=str(folder))))
    return out
