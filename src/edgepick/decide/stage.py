"""The decide stage: stored measurements → summaries → decision → stored record → deploy.yaml →
report with all its sections. `edgepick decide`, `edgepick report`, `edgepick run` and the Ray
fleet call this one function, so every caller gets the same decision, deploy file and report
(docs/architecture.md, "Decide stage")."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from edgepick.decide.decision import decide
from edgepick.decide.deploy import build_deploy, write_deploy
from edgepick.decide.power_figures import sustained_power_limit
from edgepick.decide.prune_front import prune_front
from edgepick.decide.scenarios import Scenario
from edgepick.decide.selection import select
from edgepick.decide.speculation import speculation_choice
from edgepick.decide.speculation_deploy import apply as apply_speculation
from edgepick.decide.speculation_deploy import settle
from edgepick.decide.summary import build_summaries
from edgepick.decide.wording import describe
from edgepick.errors import EdgepickError
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.records.decision import DecisionRecord
from edgepick.report import (constraint_section, doctor_section, prune_section, savings_section,
                             settings_section, speculation_section)
from edgepick.report.route_section import append_to_report, latest_route_eval
from edgepick.report.writer import LANGS, write_report

STEPS = 5  # summaries, decision, stored record, deploy.yaml, report


class DecideRequest(BaseModel):
    """What to decide over, and where to write the deploy file and the report. Frozen: the stage
    never changes its caller's request (the gated scenario is its own local value)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    scenario: Scenario
    budget: int | None = None  # the device's model budget (the peak-memory limit)
    power_budget_w: float | None = None  # the device's; 0.6 x it is sustained_power_max_w's default
    device: str | None = None  # its name, for deploy.yaml and the report
    runs: list[int] | None = None  # store runs to read; None: the latest (decide/selection.py)
    models: list[str] | None = None  # only these candidates, in this order (a plan's)
    names: dict[str, str] | None = None  # model locator -> the display name the plan gave it
    skipped: dict[str, str | None] = Field(default_factory=dict)  # name -> why not measured
    failures: dict[str, str] = Field(default_factory=dict)  # name -> why its run failed
    store_as: str | None = None  # store the decision under this key (None: not stored)
    deploy: Path | None = None  # write deploy.yaml here (None: not written)
    deploy_required: bool = False  # no recommendation is an error, not a note (`decide --deploy`)
    run_id: str | None = None  # the run(s) named in deploy.yaml; default: the runs read
    report: Path | None = None  # write the report into this folder (None: no report)
    lang: str = "both"


def run(request: DecideRequest, store, progress: Tick = silent) -> DecisionRecord:
    """The decision over `store` for `request`, with what was written and what to say."""
    req, notes = request, []

    def step(done: int, what: str) -> None:
        progress(ProgressEvent(done, STEPS, what))

    step(0, "summaries")
    selection = select(store, req.runs or None)
    summaries = build_summaries(store, models=req.models, names=req.names, selection=selection)
    if not summaries:
        raise EdgepickError(f"{store.path}: the store holds no fit, bench, eval or fidelity "
                            "results")
    for s in summaries:
        if s.candidate in req.skipped:
            s.skipped = req.skipped[s.candidate]
        if s.candidate in req.failures and not s.bench_error:
            s.bench_error = req.failures[s.candidate]
    step(1, "decision")

    scenario = sustained_power_limit(req.scenario, req.power_budget_w, summaries)
    decision = decide(summaries, scenario, req.budget)
    decision.texts = describe(decision, summaries, scenario)  # decide, then render
    chosen = next((s for s in summaries if s.candidate == decision.recommendation), None)
    choice = None if chosen is None else speculation_choice(store, chosen)
    if choice is not None:  # its per-task speculation measurement (decide/speculation.py)
        decision.speculation = settle(choice, decision, chosen, req.budget)
    step(2, "stored record")
    if req.store_as:
        store.put("decision", req.store_as, decision.model_dump(mode="json"),
                  label=scenario.name)
    step(3, "deploy.yaml")
    deploy, replaced = None, False
    if req.deploy is not None:
        deploy, replaced = _deploy(req, scenario, decision, summaries, selection.runs, notes)
    step(4, "report")
    reports = _report(req, decision, summaries, store) if req.report is not None else []
    step(5, "done")
    return DecisionRecord(decision=decision, summaries=summaries, runs=selection.runs,
                          deploy=None if deploy is None else str(deploy),
                          deploy_replaced=replaced, reports=[str(p) for p in reports],
                          notes=notes)


def _deploy(req: DecideRequest, scenario: Scenario, decision, summaries,
            runs: dict[str, list[int]], notes: list[str]) -> tuple[Path | None, bool]:
    if decision.recommendation is None and not req.deploy_required:
        notes.append("deploy: no deploy.yaml written, nothing can be recommended")
        return None, False
    run_id = req.run_id or ",".join(map(str, sorted({r for ids in runs.values() for r in ids})))
    cfg = build_deploy(decision, summaries, scenario, device=req.device,
                       run_id=run_id or None)
    if decision.speculation is not None:
        s = next(x for x in summaries if x.candidate == decision.recommendation)
        cfg = apply_speculation(cfg, decision.speculation, s, req.budget)
    path, replaced = write_deploy(req.deploy, cfg)
    if replaced:
        notes.append(f"deploy: replaced the existing {path}")
    return path, replaced


def _report(req: DecideRequest, decision, summaries, store) -> list[Path]:
    """The report and every section the store has material for (the route evaluation's;
    tool calls and engines are inside the report itself)."""
    paths = write_report(summaries, decision, req.report, lang=req.lang, device=req.device)

    # a model measured under several runtime settings: seed 004 §5.4's table
    settings_section.append_to_report(req.report, summaries, decision, LANGS[req.lang])

    # a model run under a grammar: free and constrained side by side, with its cost in speed
    constraint_section.append_to_report(req.report, summaries, LANGS[req.lang])

    # blocks removed before quantizing: pruned and quantized builds on one size-KLD front
    prune_section.append_to_report(req.report, prune_front(summaries), LANGS[req.lang])

    if decision.speculation is not None:  # per task: each kind's speed-up and the choice
        speculation_section.append_to_report(req.report, decision.speculation, LANGS[req.lang])

    seq = savings_section.latest_sequential(store, [s.candidate for s in summaries])
    if seq is not None:  # the run evaluated in looks: what it saved
        savings_section.append_to_report(req.report, seq, LANGS[req.lang])
    routed = latest_route_eval(store)  # `edgepick route eval` into this store: its section
    if routed is not None:
        append_to_report(req.report, routed, LANGS[req.lang])

    found = doctor_section.latest_doctor(store, [s.model for s in summaries])
    if found is not None:  # `edgepick doctor` on one of these files: its causes
        doctor_section.append_to_report(req.report, found, LANGS[req.lang])
    return paths
