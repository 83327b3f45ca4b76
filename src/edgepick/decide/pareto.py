"""The Pareto front over quality × decode speed × memory (docs/decide.md), among the
candidates that
survive the hard constraints, with the same quality figure the score uses (task accuracy
weighted by the scenario's task weights)."""

from __future__ import annotations

from edgepick.decide.gates import measured_memory
from edgepick.decide.scenarios import Scenario
from edgepick.decide.scoring import weighted_accuracy
from edgepick.records.decision import CandidateSummary


def point(s: CandidateSummary, sc: Scenario) -> tuple[float, float, float] | None:
    """(quality, decode tok/s, −peak bytes): higher is better on every axis."""
    vals = (weighted_accuracy(s, sc.task_weights), s.decode_tps, measured_memory(s))
    if s.bench_error or any(v is None for v in vals):
        return None
    return float(vals[0]), float(vals[1]), -float(vals[2])


def dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x >= y for x, y in zip(a, b)) and any(x > y for x, y in zip(a, b))


def pareto_front(survivors: list[CandidateSummary], sc: Scenario) -> list[str]:
    """Names of survivors no other survivor beats on all three axes at once. Candidates lacking
    any of the three measurements are not placed (they cannot be compared)."""
    pts = {s.candidate: p for s in survivors if (p := point(s, sc)) is not None}
    return [n for n, p in pts.items() if not any(dominates(q, p) for m, q in pts.items() if m != n)]
