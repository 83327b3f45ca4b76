"""What sequential evaluation saved against fixed N, as printed after a run and shown in the
report (report/savings_section.py): items and generations per candidate, the reference's, the
time saved, each gate's stopping look, and the candidates left out altogether."""

from __future__ import annotations

from edgepick.records.evaluation import EvalResult
from edgepick.units import whole_pct


def savings(result: EvalResult) -> dict:
    """Generations used and what fixed N would have used: every model on every item, the
    candidates that sequential evaluation left out (a gate no routing avoids) included, since
    a fixed-N run evaluates them too. Time saved: each model's skipped generations at its mean
    seconds per generation in this run (models whose outputs all came from the store are not
    timed; `time_saved_s` is None when none was)."""
    seq = result.sequential
    k = result.samples
    models = 1 + len(seq.candidates) + len(seq.not_evaluated)
    fixed = seq.fixed_items * k * models
    used = seq.reference_items * k + sum(c.generations for c in seq.candidates)
    skipped = {result.reference.name: (seq.fixed_items - seq.reference_items) * k}
    skipped |= {c.name: c.fixed_items * k - c.generations for c in seq.candidates}
    spg = seq.seconds_per_generation
    timed = [m for m in skipped if m in spg]
    saved = sum(skipped[m] * spg[m] for m in timed) if timed else None
    if saved is not None and seq.not_evaluated:  # never loaded: at the evaluated models' mean
        mean = sum(spg[m] for m in timed) / len(timed)
        saved += seq.fixed_items * k * len(seq.not_evaluated) * mean
    return {"generations": used, "fixed_generations": fixed,
            "share": used / fixed if fixed else 1.0,
            "per_candidate": {c.name: (c.items, c.fixed_items) for c in seq.candidates},
            "generations_per_candidate": {c.name: (c.generations, c.fixed_items * k)
                                          for c in seq.candidates},
            "reference": (seq.reference_items, seq.fixed_items),
            "time_saved_s": saved, "timed": timed}


def _gate(g) -> str:
    when = f"look {g.look}, {g.items} items" if g.look else f"open at {g.items} items"
    return f"{g.metric} {g.verdict} ({when})"


def gate_line(c) -> str:
    """The gates judged over all tasks together; each task's own are on its cell's line."""
    return "; ".join(f"{_gate(g)} over all tasks" for g in c.gates if g.task is None)


def cell_lines(c) -> list[str]:
    """One line per (candidate, task) cell, naming the task: its items against fixed N, its
    own gates and why it stopped where it did."""
    out = []
    for cell in c.cells:
        gates = "; ".join(_gate(g) for g in c.gates if g.task == cell.task)
        out.append(f"{c.name} [{cell.task}]: {cell.items} of {cell.planned} items"
                   + (f"; {gates}" if gates else "") + f"; {cell.why}")
    return out


def time_text(s: dict) -> str:
    t = s["time_saved_s"]
    if t is None:
        return "time saved not measured (every output came from the store)"
    return f"about {t:.0f} s of generation saved (at this run's seconds per generation)"


def savings_lines(result: EvalResult) -> list[str]:
    seq = result.sequential
    if seq is None:
        return []
    s = savings(result)
    k = result.samples
    lines = [f"sequential: {s['generations']} generations instead of {s['fixed_generations']} "
             f"for fixed N ({whole_pct(s['share'])}) over {seq.looks} looks; the reference answered "
             f"{seq.reference_items} of {seq.fixed_items} items; {time_text(s)}"]
    for c in seq.candidates:
        gens = f", {c.generations} of {c.fixed_items * k} generations" if k > 1 else ""
        gates = gate_line(c)
        lines.append(f"{c.name}: {c.items} of {c.fixed_items} items{gens} ({c.why})"
                     + (f"; {gates}" if gates else ""))
        if c.went_on:
            lines.append(f"{c.name}: {c.went_on}")
        lines += cell_lines(c)
    for name, gate in seq.not_evaluated.items():
        lines.append(f"{name}: not evaluated, 0 of {seq.fixed_items} items (fails {gate}, "
                     "which no routing avoids)")
    if seq.budget_exhausted:
        lines.append(f"budget of {seq.budget_s:.0f} s spent; undetermined: "
                     + (", ".join(seq.undetermined) or "nothing"))
        for name, ids in seq.to_settle.items():
            lines.append(f"to settle {name}: next items {', '.join(ids[:8])}")
    return lines
