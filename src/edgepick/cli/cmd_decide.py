"""`edgepick decide`, `edgepick report` and `edgepick run`: the scenario's verdict over stored
results, the report, and the whole pipeline from a plan."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from edgepick.cli.cmd_reselect import show_reselection
from edgepick.cli.options import RUN_HELP, STORE_HELP
from edgepick.cli.decision_print import (print_decision, print_none_next_steps, print_notes,
                                          runs_line)
from edgepick.cli.output import console, print_json
from edgepick.cli.run_display import RichRunDisplay
from edgepick.cluster.fleet import run_fleet
from edgepick.decide.scenarios import load_scenario
from edgepick.decide.stage import DecideRequest, run as run_stage
from edgepick.decide.view import enrich
from edgepick.devices.catalog import load_device
from edgepick.errors import EdgepickError
from edgepick.monitor.window import parse_window
from edgepick.plan.loader import load_plan
from edgepick.plan.runner import run_plan
from edgepick.plan.traffic import reselect
from edgepick.report.writer import LANGS
from edgepick.store import ResultStore

# `edgepick run`'s longer option texts, one table (typer reflows them to the terminal)
PLAN_RUN_HELP = {
    "executor": "local (this machine) or ray (each device's jobs on the node carrying its tag; "
                "docs/scale.md)",
    "address": "with --executor ray: the Ray head HOST:PORT [default: the plan's "
               "cluster.address, else a private Ray on this machine]",
    "budget": "time for the whole run, e.g. 5m or 1h: eval spends it on the least settled gates "
              "first and the decision names what is left undetermined",
    "traffic": "re-select on sampled traffic (edgepick serve --sample-out): the candidates run "
               "on its items; the new deploy.yaml lands beside the deployed one "
               "(docs/operations.md)",
    "traffic_weight": "with --traffic: share of traffic items, mixed with the plan's own sets "
                      "[default: traffic alone]",
    "deployed": "with --traffic: the deploy.yaml in service [default: <output>/deploy.yaml]",
    "yes": "run a runtime grid larger than the plan's cap (runtime.max_combinations, default "
           "16 combinations; docs/plan.md \"Runtime settings as an axis\")",
}


def _budget(device: str | None) -> int | None:
    if not device:
        return None

    return load_device(device).model_budget_bytes


def _power_budget(device: str | None) -> float | None:
    if not device:
        return None

    return load_device(device).power_budget_w


def _decide(store_path: str | None, runs: list[int] | None, scenario: str, device: str | None,
            **kw):
    """The decide stage (decide/stage.py) over the store's selected runs."""
    req = DecideRequest(scenario=load_scenario(scenario), budget=_budget(device), device=device,
                        power_budget_w=_power_budget(device), runs=runs or None, **kw)
    with ResultStore(store_path or None, must_exist=True) as store:
        rec = run_stage(req, store)
    print_notes(rec.notes)
    return rec


def decide(store: str = typer.Option(None, "--store", help=STORE_HELP),
           run_ids: list[int] = typer.Option(None, "--run", help=RUN_HELP),
           scenario: str = typer.Option("realtime_chat", "--scenario",
                                        help="preset name or scenario YAML file"),
           device: str = typer.Option(None, "--device",
                                      help="catalog name, profile file or 'local': its model "
                                           "budget is the peak-memory limit"),
           json_out: bool = typer.Option(False, "--json", help="print JSON"),
           deploy: str = typer.Option(None, "--deploy",
                                      help="write the recommendation as a deploy.yaml here "
                                           "(docs/deploy.md)")) -> None:
    """Rank the stored candidates for a scenario: the recommendation, its status and why.

    Eliminate, score, rank and explain; --deploy writes the deploy.yaml that `edgepick serve`
    runs."""
    rec = _decide(store, run_ids, scenario, device, deploy=Path(deploy) if deploy else None,
                  deploy_required=bool(deploy))
    decision, summaries, runs = rec.decision, rec.summaries, rec.runs
    if json_out:
        data = decision.model_dump(mode="json")
        data["runs"] = runs
        data["candidates"] = [s.model_dump(mode="json") for s in summaries]
        data["ranking"] = [{"candidate": r.candidate, "score": r.score,
                            "eliminated": r.eliminated, "reasons": r.reasons,
                            "violations": [v.model_dump() for v in r.violations],
                            "layer_scores": r.layer_scores, "pareto": r.pareto}
                           for r in decision.ranking]

        enrich(data, decision, summaries)
        if rec.deploy:
            data["deploy"] = rec.deploy
        print_json(data)
        return
    print_decision(decision)
    if rec.deploy:
        console.print(f"deploy: {rec.deploy}", highlight=False)
    console.print(runs_line(runs), style="dim", highlight=False)


def report(store: str = typer.Option(None, "--store", help=STORE_HELP),
           run_ids: list[int] = typer.Option(None, "--run", help=RUN_HELP),
           out: str = typer.Option("edgepick-report", "--out", help="output directory"),
           scenario: str = typer.Option("realtime_chat", "--scenario",
                                        help="preset name or scenario YAML file"),
           device: str = typer.Option(None, "--device", help="catalog name, profile file or "
                                      "'local': its model budget is the peak-memory limit"),
           lang: str = typer.Option("both", "--lang", help="en | zh | both")) -> None:
    """Write the Markdown and self-contained HTML report plus CSV/JSON of every figure."""
    if lang not in LANGS:  # before any work, as the report writer would say it
        raise EdgepickError(f"--lang must be en, zh or both, got '{lang}'")
    rec = _decide(store, run_ids, scenario, device, report=Path(out), lang=lang)
    for p in rec.reports:
        console.print(str(p))


def run(plan: str = typer.Argument(..., help="plan YAML, or 'default' for the packaged main job"),
        store: str = typer.Option(None, "--store", help="results store (SQLite) "
                                  "[default: the plan's store, <output>/results.sqlite]"),
        json_out: bool = typer.Option(False, "--json", help="print the decision as JSON"),
        executor: str = typer.Option("local", "--executor", help=PLAN_RUN_HELP["executor"]),
        address: str = typer.Option(None, "--address", help=PLAN_RUN_HELP["address"]),
        budget: str = typer.Option(None, "--budget", help=PLAN_RUN_HELP["budget"]),
        traffic: str = typer.Option(None, "--traffic", help=PLAN_RUN_HELP["traffic"]),
        traffic_weight: float = typer.Option(None, "--traffic-weight",
                                             help=PLAN_RUN_HELP["traffic_weight"]),
        deployed: str = typer.Option(None, "--deployed",
                                     help=PLAN_RUN_HELP["deployed"]),
        yes: bool = typer.Option(False, "--yes", help=PLAN_RUN_HELP["yes"]),
        reference_key_env: str = typer.Option(
            None, "--reference-key-env", metavar="VAR",
            help="environment variable holding the reference endpoint's API key "
                 "[default: the plan's eval.reference_api_key_env]")) -> None:
    """Run a whole plan: a decision, its report and, when something passes, a deploy.yaml.

    The stages: fit → quantize → bench → eval → fidelity → decide → report."""
    budget_s = None
    if budget is not None:
        try:
            budget_s = parse_window(budget)
        except ValueError as exc:
            raise EdgepickError(f"--budget: {exc}") from None
        if budget_s is None:
            raise EdgepickError("--budget: expected a duration such as 5m, 90s or 1h")
    lp = load_plan(plan)
    lp.yes = yes
    if reference_key_env:
        lp.use_reference_key_env(reference_key_env)
    if store:
        lp.plan.store = os.path.abspath(store)
    if traffic or traffic_weight is not None or deployed:
        if not traffic:
            raise EdgepickError("--traffic-weight and --deployed go with --traffic FILE")
        sel = reselect(lp, Path(traffic), traffic_weight, Path(deployed) if deployed else None,
                       RichRunDisplay())
        if json_out:
            print_json(sel.result.decision)
            return
        show_reselection(sel)
        return
    if executor != "local" or address or lp.plan.devices:
        if budget_s is not None:
            raise EdgepickError("--budget runs on this machine only (not with a fleet)")

        result = run_fleet(lp, executor, address, RichRunDisplay())
    else:
        result = run_plan(lp, RichRunDisplay(), budget_s=budget_s)
    if json_out:
        print_json(result.decision)
        return
    print_decision(result.decision)
    print_notes(result.notes)
    for p in result.reports:
        console.print(f"report: {p}")
    if getattr(result, "deploy", None):
        console.print(f"deploy: {result.deploy}", highlight=False)
    elif result.decision.recommendation is None:
        print_none_next_steps(result.decision, getattr(result, "summaries", []))


def register(app: typer.Typer) -> None:
    app.command()(decide)
    app.command()(report)
    app.command()(run)
