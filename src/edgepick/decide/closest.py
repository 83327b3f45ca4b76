"""When no candidate survives: which one comes nearest, and which constraint binds them all.

"None" alone leaves the user where they started; the seeds' method asks what would have to
change. Nearness is the number of broken constraints, then how far past its limits a candidate
is (value ÷ limit for a maximum, limit ÷ value for a minimum, summed), so a candidate at 8%
unacceptable against a 5% limit is nearer than one at 60%.
"""

from __future__ import annotations

from edgepick.records.decision import RankedCandidate, Violation

# Constraints whose value and limit are comparable numbers (not failures or missing runs).
_MEASURED_OPS = {">", "<"}


def overshoot(v: Violation) -> float:
    if v.op not in _MEASURED_OPS or v.value is None or not v.limit:
        return float("inf")  # failed, not measured or not fitting: as far as it gets
    if v.op == ">":
        return max(0.0, v.value / v.limit - 1.0)
    return float("inf") if v.value <= 0 else max(0.0, v.limit / v.value - 1.0)


def nearness(r: RankedCandidate) -> tuple[int, float, str]:
    return (len(r.violations), sum(overshoot(v) for v in r.violations), r.candidate)


def binding_constraints(dead: list[RankedCandidate]) -> list[str]:
    """Measured constraints every eliminated candidate breaks, in the order of the first one."""
    if not dead:
        return []
    common = set.intersection(*({v.constraint for v in r.violations
                                 if v.op in _MEASURED_OPS} for r in dead))
    return [v.constraint for v in dead[0].violations if v.constraint in common]


def best_value(dead: list[RankedCandidate], constraint: str) -> tuple[str, Violation]:
    """The candidate that comes closest on one constraint, with its violation."""
    pairs = [(r.candidate, v) for r in dead for v in r.violations if v.constraint == constraint]
    return min(pairs, key=lambda p: (overshoot(p[1]), p[0]))
