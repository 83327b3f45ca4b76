"""Decide's per-task speculation (decide/speculation.py) in deploy.yaml.

llama-server fixes its kind of speculative decoding when it starts (common/arg.cpp's
`--spec-type`; the per-request `speculative.*` fields of tools/server/server-schema.cpp are
compiled out in the pinned llama.cpp), so a choice that differs between tasks needs a second
engine over the same file:

- `off`: no task gains, `runtime.speculative` is left out (plain decoding everywhere);
- `everywhere`: every measured task chose the same kind, `runtime.speculative` carries it;
- `per-task`: a team (schema 2) of the model decoding plainly (the default, `model`) and the
  same file with each chosen kind (`NAME+KIND`), both pinned; each task's route names the
  engine it is served by. Chosen only when the memory plan fits the budget with both pinned
  (the weights are mapped once per process in the plan's accounting, an upper bound: the page
  cache shares them); otherwise plain decoding everywhere and the note says why;
- `report-only`: the decision is already a team or a hybrid, whose routes the choice leaves
  alone; the report still shows the figures.
"""

from __future__ import annotations

import os

from edgepick.decide.gate_figures import measured_memory
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.decision import CandidateSummary, Decision
from edgepick.records.deploy import TEAM_SCHEMA_VERSION, DeployConfig
from edgepick.records.speculative import Speculation, SpeculationChoice
from edgepick.records.team import EdgeModel, MemoryPlan, memory_plan
from edgepick.units import mib


def member_name(model: str, kind: Speculation) -> str:
    return f"{model}+{kind.tag()}"


def _kinds(choice: SpeculationChoice) -> dict[str, Speculation]:
    """The chosen kinds by tag, in the tasks' order."""
    return {t.chosen.tag(): t.chosen for t in choice.tasks if t.chosen is not None}


def _need(summary: CandidateSummary, kind: Speculation | None) -> int | None:
    need = measured_memory(summary)
    if need is None or kind is None or not kind.model or not os.path.isfile(kind.model):
        return need
    return need + os.path.getsize(kind.model)  # the draft's weights beside the target's need


def _members(name: str, summary: CandidateSummary, kinds: dict[str, Speculation]):
    return [(name, None, _need(summary, None))] + [
        (member_name(name, k), k, _need(summary, k)) for k in kinds.values()]


def settle(choice: SpeculationChoice, decision: Decision, summary: CandidateSummary,
           budget: int | None) -> SpeculationChoice:
    """How deploy.yaml will carry `choice` (its `applied` and `note`), before the decision is
    stored."""
    kinds = _kinds(choice)
    if decision.status in ("team", "hybrid"):
        return choice.model_copy(update={
            "applied": "report-only",
            "note": f"the decision is a {decision.status}: its routes are kept, speculation is "
                    "shown, not applied"})
    if not kinds:
        return choice.model_copy(update={"applied": "off"})
    plain = {t.task for t in choice.tasks if t.chosen is None}
    if len(kinds) == 1 and not plain:
        return choice.model_copy(update={"applied": "everywhere"})
    stubs = [EdgeModel(name=n, path="", sha256="", pin=True, need_bytes=need)
             for n, _, need in _members(summary.candidate, summary, kinds)]
    fit = memory_plan(stubs, budget)
    if fit.fits is False:
        wins = ", ".join(sorted(t.task for t in choice.tasks if t.chosen))
        return choice.model_copy(update={
            "applied": "off",
            "note": f"speculation wins on {wins}, but serving it per task needs a second engine "
                    f"over the same file: {mib(fit.total)} pinned exceeds the budget "
                    f"{mib(budget)}"})
    return choice.model_copy(update={"applied": "per-task"})


def apply(cfg: DeployConfig, choice: SpeculationChoice, summary: CandidateSummary,
          budget: int | None) -> DeployConfig:
    """deploy.yaml carrying the settled choice (module docstring)."""
    if choice.applied == "report-only":
        return cfg
    plain = cfg.runtime.model_copy(update={"speculative": None})
    kinds = _kinds(choice)
    if choice.applied != "per-task" or not kinds:
        one = next(iter(kinds.values())) if choice.applied == "everywhere" else None
        return cfg.model_copy(update={"runtime": plain.model_copy(update={"speculative": one})})
    models = []
    for name, kind, need in _members(cfg.model.name, summary, kinds):
        rt = None if kind is None else _member_runtime(plain, kind)
        m = cfg.model
        models.append(EdgeModel(name=name, path=m.path, sha256=m.sha256, quant=m.quant,
                                backend=m.backend, runtime=rt, pin=True, need_bytes=need))
    by_task = {t.task: t.chosen for t in choice.tasks}
    routes = [r.model_copy(update={"route": member_name(cfg.model.name, by_task[r.task])})
              if r.route == "edge" and by_task.get(r.task) is not None else r
              for r in cfg.routes]
    note = ("speculative decoding per task: " + "; ".join(
        f"{t.task} {t.chosen.tag() if t.chosen else 'none'}" for t in choice.tasks)
        + " (a second engine over the same file serves the tasks it wins)")
    return DeployConfig.model_validate(cfg.model_copy(update={
        "schema_version": TEAM_SCHEMA_VERSION, "runtime": plain, "models": models,
        "routes": routes, "memory": MemoryPlan(budget_bytes=budget),
        "notes": list(cfg.notes) + [note]}).model_dump())


def _member_runtime(plain: RuntimeSettings, kind: Speculation) -> RuntimeSettings:
    return plain.model_copy(update={"speculative": kind, "variant": f"spec={kind.tag()}"})
