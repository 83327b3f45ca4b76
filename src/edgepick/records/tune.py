"""What `edgepick tune` measured and chose (tune/search.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from edgepick.records.candidate import RuntimeSettings

Outcome = Literal["chosen", "kept", "slower", "fails_gate", "unfaithful", "cannot_run",
                  "does_not_fit", "not_measured"]


class TunePoint(BaseModel):
    """One combination of settings and what became of it."""

    settings: dict  # the fields that differ from the base, e.g. {"kv_type": "q8_0"}
    outcome: Outcome
    why: str = ""
    decode_tps: float | None = None  # median over the repeats
    ttft_ms: float | None = None
    kld_mean: float | None = None  # against the f16-KV baseline of the same file
    top1: float | None = None
    contended: str = ""  # other work beside the measurement, in words, when it was contended


class TuneResult(BaseModel):
    model: str
    device: str
    scenario: str
    ctx: int  # the prompt length measured (the scenario's P99, else P95, else its base)
    chosen: RuntimeSettings
    grid: int  # combinations in the full grid
    measured: int  # combinations bench ran
    points: list[TunePoint] = Field(default_factory=list)
    # the measurements a busy host spoiled: the choice stands only when told to (allow_contended)
    contended: list[str] = Field(default_factory=list)
    allowed_contended: bool = False

    def skipped(self) -> dict[str, int]:
        """Why combinations were not measured, by reason."""
        out: dict[str, int] = {}
        for p in self.points:
            if p.outcome in ("cannot_run", "does_not_fit", "not_measured"):
                out[p.outcome] = out.get(p.outcome, 0) + 1
        return out
