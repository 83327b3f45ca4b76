"""How a decision reads in the terminal: the ranking table, the recommendation and its reasons.
Shared by `decide`, `report`, `run` and `reselect`."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from edgepick.cli.output import console, human_bytes


def runs_line(runs: dict[str, list[int]]) -> str:
    return "runs used: " + ", ".join(f"{kind} {', '.join(map(str, ids))}"
                                     for kind, ids in runs.items())


def print_notes(notes: list[str]) -> None:
    """The run's notes as written: a cell's "[task]" is text, not console markup."""
    for note in notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)


def print_decision(decision) -> None:
    t = Table(title=f"scenario {decision.scenario}"
              + (f" · budget {human_bytes(decision.budget_bytes)}" if decision.budget_bytes else ""))
    for col in ("#", "candidate", "score", "pareto", "eliminated / notes"):
        t.add_column(col)
    for i, r in enumerate(decision.ranking, 1):
        t.add_row(str(i), r.candidate, "-" if r.score is None else f"{r.score:.3f}",
                  "yes" if r.pareto else "", "; ".join(r.reasons))
    console.print(t)
    ex = decision.explanation
    status = f" ({decision.status})" if decision.recommendation else ""
    console.print(f"[bold]recommendation:[/] {decision.recommendation or 'none'}{status}",
                  highlight=False)
    for title, lines in (("why", ex.why), ("cost vs runner-up", ex.cost), ("watch", ex.watch)):
        if lines:
            console.print(f"[bold]{title}:[/]")
            for line in lines:
                console.print(f"  - {line}", highlight=False)
    if decision.speculation is not None:
        print_speculation(decision.speculation)


def print_speculation(sp) -> None:
    """Decide's per-task speculation: each task's kind or why it decodes plainly, and how
    deploy.yaml carries it (decide/speculation.py)."""
    console.print(f"[bold]speculative decoding[/] (deploy.yaml: {sp.applied}"
                  + (f"; {escape(sp.note)}" if sp.note else "") + "):", highlight=False)
    for t in sp.tasks:
        f = next((f for f in t.figures if t.chosen and f.setting == t.chosen.tag()), None)
        f = f or max(t.figures, key=lambda f: f.speedup or 0.0, default=None)
        fig = "" if f is None or f.speedup is None else (
            f" — {f.setting} {f.speedup:.2f}× [{f.speedup_low:.2f}, {f.speedup_high:.2f}]")
        what = t.chosen.tag() if t.chosen else f"off ({t.reason})"
        console.print(f"  - {t.task}: {what}{fig}", highlight=False)


def nearest(decision, summaries) -> tuple[str, str, list[str]] | None:
    """The candidate closest to passing when none passes: the fewest broken gates, then the
    ranking's order; (name, model file, what it fails). None when it is not a local file."""
    ranked = [r for r in decision.ranking if r.eliminated]
    if not ranked:
        return None
    best = min(ranked, key=lambda r: len(r.violations) or len(r.reasons) or 99)
    s = next((x for x in summaries if x.candidate == best.candidate), None)
    if s is None or "://" in (s.model or ""):
        return None
    return best.candidate, s.model, [v.text for v in best.violations][:3] or best.reasons[:3]


def print_none_next_steps(decision, summaries) -> None:
    """What to do when the status is none: no deploy.yaml was written (docs/serve.md)."""
    console.print("[bold]next:[/] nothing passes every gate, so no deploy.yaml was written "
                  "(docs/serve.md, \"When the recommendation is none\"):", highlight=False)
    near = nearest(decision, summaries)
    if near is not None:
        name, path, fails = near
        console.print(f"  - to try the nearest candidate, {name}, anyway — [bold]not "
                      f"recommended[/], it fails: {'; '.join(fails) or 'its gates'}",
                      highlight=False)
        console.print(f"      edgepick serve -m {path}", highlight=False, soft_wrap=True)
    console.print("  - or change what \"why\" names (a larger model, a real cloud reference "
                  "with eval.reference, another scenario) and run again", highlight=False)
