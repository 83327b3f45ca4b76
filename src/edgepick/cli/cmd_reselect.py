"""`edgepick reselect DEPLOY.yaml --plan PLAN --traffic traffic.jsonl`: the next selection round
on sampled production traffic (seed 000 §7.4); the new deploy.yaml lands beside the
deployed one, never over it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from edgepick.cli.decision_print import print_decision, print_notes
from edgepick.cli.output import console, print_json
from edgepick.cli.run_display import RichRunDisplay
from edgepick.errors import EdgepickError
from edgepick.plan.loader import load_plan
from edgepick.plan.traffic import reselect as run_reselect


def show_reselection(sel) -> None:
    print_decision(sel.result.decision)
    print_notes(sel.result.notes)
    for p in sel.result.reports:
        console.print(f"report: {p}", highlight=False)
    if sel.deployed is not None:
        console.print(f"changed from {sel.deployed}:", highlight=False)
        for c in sel.changes:
            console.print(f"  {c}", highlight=False)
    if sel.deploy is not None:
        console.print(f"deploy: {sel.deploy}", highlight=False)
        console.print("serve it: edgepick models add MODEL.gguf --name NAME --version V, then "
                      "edgepick models activate NAME@V --server URL (docs/operations.md)",
                      highlight=False)


def register(app: typer.Typer) -> None:
    @app.command()
    def reselect(
        deploy: Path = typer.Argument(..., help="the deploy.yaml in service"),
        plan: str = typer.Option(..., "--plan", help="the plan whose candidates to run again"),
        traffic: Path = typer.Option(..., "--traffic",
                                     help="sampled items (edgepick serve --sample-out)"),
        weight: Optional[float] = typer.Option(None, "--traffic-weight",
                                               help="share of traffic items when mixed with the "
                                                    "plan's own sets, e.g. 0.5 [default: "
                                                    "traffic alone]"),
        json_out: bool = typer.Option(False, "--json", help="print the decision and the "
                                      "changes as JSON"),
    ) -> None:
        """Select again on sampled traffic: a new decision, and a new deploy.yaml beside the
        deployed one.

        Run the plan's candidates on the sampled traffic (alone or mixed at a weight) and write
        a decision naming what changed from the deployed one; its deploy.yaml is written beside
        DEPLOY.yaml under a new name."""
        if not deploy.is_file():
            raise EdgepickError(f"{deploy}: no such deploy.yaml")
        sel = run_reselect(load_plan(plan), traffic, weight, deploy, RichRunDisplay())
        if json_out:
            print_json({"decision": sel.result.decision.model_dump(mode="json"),
                        "changes": sel.changes, "deploy": str(sel.deploy) if sel.deploy else None,
                        "notes": sel.result.notes})
            return
        show_reselection(sel)
