"""How a decision reads in the terminal: the ranking table, the recommendation and its reasons.
Shared by `decide`, `report`, `run` and `reselect`."""

from __future__ import annotations

from rich.table import Table

from edgepick.cli.output import console, human_bytes


def runs_line(runs: dict[str, list[int]]) -> str:
    return "runs used: " + ", ".join(f"{kind} {', '.join(map(str, ids))}"
                                     for kind, ids in runs.items())


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
