"""The check contract: a check changes one axis against a known-good baseline and returns a
Finding when that axis explains the symptom, None when it does not, or raises Skip when it
cannot run here (no reference, no local file, no sensor)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from edgepick.doctor.finding import SHOWS_AS, Evidence, Finding, Fix


class Skip(Exception):
    """The check cannot run on this target; the message says what it needs."""


@dataclass(frozen=True)
class Check:
    name: str
    cause: str
    run: Callable  # (Ctx) -> Finding | None
    cost_s: float  # expected seconds on a 2-core host, for the time budget
    needs_file: bool = True  # a local GGUF


def finding(ctx, cause: str, summary: str, fix: Fix, confidence: float,
            evidence: list[Evidence], detail: str | None = None) -> Finding:
    return Finding(symptom=ctx.symptom or SHOWS_AS[cause], cause=cause, detail=detail,
                   summary=summary, evidence=evidence, fix=fix,
                   confidence=round(min(max(confidence, 0.0), 1.0), 2), check=cause)
