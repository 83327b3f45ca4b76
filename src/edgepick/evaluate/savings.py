"""What sequential evaluation saved against fixed N, as printed after a run and shown in the
report: items and generations per candidate, the reference's, and each gate's stopping look."""

from __future__ import annotations

from edgepick.records.evaluation import EvalResult


def savings(result: EvalResult) -> dict:
    """Generations used and what fixed N would have used (every model on every item)."""
    seq = result.sequential
    k = result.samples
    fixed = seq.fixed_items * k * (1 + len(seq.candidates))
    used = seq.reference_items * k + sum(c.generations for c in seq.candidates)
    return {"generations": used, "fixed_generations": fixed,
            "share": used / fixed if fixed else 1.0,
            "per_candidate": {c.name: (c.items, c.fixed_items) for c in seq.candidates},
            "reference": (seq.reference_items, seq.fixed_items)}


def gate_line(c) -> str:
    parts = []
    for g in c.gates:
        where = g.task or "all"
        when = f"look {g.look}, {g.items} items" if g.look else f"open at {g.items} items"
        parts.append(f"{g.metric}[{where}] {g.verdict} ({when})")
    return "; ".join(parts)


def savings_lines(result: EvalResult) -> list[str]:
    seq = result.sequential
    if seq is None:
        return []
    s = savings(result)
    lines = [f"sequential: {s['generations']} generations instead of {s['fixed_generations']} "
             f"for fixed N ({s['share']:.0%}) over {seq.looks} looks; the reference answered "
             f"{seq.reference_items} of {seq.fixed_items} items"]
    for c in seq.candidates:
        lines.append(f"{c.name}: {c.items} of {c.fixed_items} items ({c.why}); {gate_line(c)}")
    if seq.budget_exhausted:
        lines.append(f"budget of {seq.budget_s:.0f} s spent; undetermined: "
                     + (", ".join(seq.undetermined) or "nothing"))
        for name, ids in seq.to_settle.items():
            lines.append(f"to settle {name}: next items {', '.join(ids[:8])}")
    return lines
