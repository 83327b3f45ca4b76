"""The Pareto front over quality × decode speed × memory (SPEC §8)."""

from __future__ import annotations

from edgepick.records.decision import CandidateSummary

# (attribute, sign): sign +1 = higher is better, -1 = lower is better.
AXES = (("quality_overall", 1), ("decode_tps", 1), ("peak_rss_bytes", -1))


def _point(s: CandidateSummary) -> tuple[float, ...] | None:
    vals = [getattr(s, a) for a, _ in AXES]
    if s.bench_error or any(v is None for v in vals):
        return None
    return tuple(sign * float(v) for v, (_, sign) in zip(vals, AXES))


def dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x >= y for x, y in zip(a, b)) and any(x > y for x, y in zip(a, b))


def pareto_front(summaries: list[CandidateSummary]) -> list[str]:
    """Names of candidates no other candidate beats on all three axes at once. Candidates lacking
    any of the three measurements are not placed (they cannot be compared)."""
    pts = {s.candidate: p for s in summaries if (p := _point(s)) is not None}
    return [n for n, p in pts.items() if not any(dominates(q, p) for m, q in pts.items() if m != n)]
