"""`deploy.yaml`: what the decision hands to `edgepick serve` (seed 000 §7.3-7.4, seed 001 §6.4).

The decision writes it; serve, route and monitor read it and nothing else of the decision, so the
data flows one way: decide → deploy.yaml → serve/route → monitor. Schema documented in
docs/deploy.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from edgepick.constraints import ConstraintError, check_constraint
from edgepick.errors import EdgepickError, InputError
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.model_ref import DEFAULT_ENGINE
from edgepick.records.prune import PruneFacts
from edgepick.records.team import (CLOUD, DEFAULT_EDGE, Cascade, EdgeModel, MemoryFit, MemoryPlan,
                                   memory_plan)
from edgepick.records.update import UpdatePolicy
from edgepick.yaml_input import read_yaml_mapping, validate_input

DEPLOY_SCHEMA_VERSION = 1  # a single model, as every release before teams wrote it
TEAM_SCHEMA_VERSION = 2  # `models`, `cascades`, `memory` (records/team.py)
READABLE_VERSIONS = (DEPLOY_SCHEMA_VERSION, TEAM_SCHEMA_VERSION)
TEAM_FIELDS = ("models", "cascades", "memory")

Verdict = Literal["pass", "fail", "undetermined", "unmeasured"]
Status = Literal["proven", "provisional", "hybrid", "team", "none"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DeployModel(_Strict):
    name: str  # display name of the chosen candidate
    path: str  # the GGUF the edge engine loads
    sha256: str  # checked before serving; a mismatch refuses to start
    quant: str | None = None
    backend: str = DEFAULT_ENGINE
    pruned: PruneFacts | None = None  # blocks removed from its source before quantizing


class Gate(_Strict):
    """One hard constraint with the measured value and its 95% interval."""

    metric: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    limit: float | None = None
    direction: Literal["max", "min"] = "max"  # max: value must stay ≤ limit; min: ≥ limit
    verdict: Verdict = "unmeasured"
    items_to_settle: int | None = None  # undetermined: how many more items would settle it
    # a speed gate that failed on a contended measurement: other work's share of the CPUs then
    contended_share: float | None = None
    at_tokens: int | None = None  # the prompt length the figure was measured (or wanted) at
    # a memory gate: "need" (anonymous + file pages read, bench/need.py) or "VmHWM" (a bench
    # stored before the need was measured; the high-water mark over-counts mapped pages)
    basis: str | None = None


class TaskRoute(_Strict):
    task: str
    route: str = DEFAULT_EDGE  # edge (the file's `model`), cloud, or a team model's name
    badcases_per_1000: float | None = None
    low: float | None = None
    high: float | None = None
    share: float | None = None  # this task's share of requests in the scenario's mix
    latency_ms: float | None = None  # expected end-to-end latency on its path (edge: measured)


class Sampling(_Strict):
    """Sampling defaults serve applies to requests that do not set their own (seed 000 §6).

    A field left out keeps the engine's/client's own value; the whole block absent means greedy
    or whatever the client sends. With `DeployConfig.lock_sampling` serve overrides the client.
    """

    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    repeat_penalty: float | None = Field(default=None, gt=0)
    seed: int | None = None


class TaskConstraint(_Strict):
    """What serve holds one task's answers to (seed 000 §2.3): a JSON schema
    (extraction, tool arguments) or a label set (classification), exactly one. Checked on load
    by the same safety check every grammar passes (edgepick/constraints.py)."""

    json_schema: dict | None = None
    labels: list[str] | None = None

    @model_validator(mode="after")
    def _safe(self) -> "TaskConstraint":
        try:
            check_constraint(self.as_constraint())
        except ConstraintError as exc:
            raise ValueError(exc.message) from None
        return self

    def as_constraint(self) -> dict:
        """{"json_schema": …} or {"labels": […]}, as backends' GRAMMAR takes it."""
        return self.model_dump(exclude_none=True)


class CloudEndpoint(_Strict):
    url: str  # OpenAI-compatible base URL, ending in /v1
    model: str | None = None
    api_key_env: str | None = "EDGEPICK_CLOUD_API_KEY"  # the key is read from this variable


class Baseline(_Strict):
    """The figures the decision was based on; `edgepick monitor --against` compares live ones."""

    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    decode_tps: float | None = None
    peak_memory_bytes: int | None = None
    unacceptable_rate: float | None = None
    format_error_rate: float | None = None
    badcases_per_1000: float | None = None
    power_w: float | None = None  # sustained (else point) bench power, where a counter existed
    temperature_c: float | None = None  # hottest sensor over the sustained run


class EmbeddingEngine(_Strict):
    """`embeddings:` an engine for `/v1/embeddings` beside the chat one (llama-server
    `--embeddings`): a causal model needs a pooling type to give one vector per input."""

    model: str  # the GGUF it loads (relative to deploy.yaml's folder); may be the chat model
    sha256: str | None = None  # checked before serving when given
    pooling: Literal["mean", "last", "cls"] = "mean"
    slots: int = Field(default=1, ge=1, le=16)  # inputs embedded at once
    n_ctx: int = Field(default=512, ge=8)  # longest input in tokens (one ubatch)


class DeployConfig(_Strict):
    schema_version: int = DEPLOY_SCHEMA_VERSION
    created: str | None = None  # ISO time
    run_id: str | None = None  # the store run the decision was made on
    scenario: str | None = None
    device: str | None = None
    status: Status = "provisional"
    model: DeployModel
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    default_route: Literal["edge", "cloud"] = "edge"
    routes: list[TaskRoute] = Field(default_factory=list)
    cloud_share: float | None = None  # expected share of requests sent to the cloud
    cloud: CloudEndpoint | None = None
    gates: list[Gate] = Field(default_factory=list)
    baseline: Baseline = Field(default_factory=Baseline)
    notes: list[str] = Field(default_factory=list)
    # The product's own constraints: what the edge must serve alone and how.
    sampling: Sampling | None = None  # absent: greedy / the client's own sampling
    lock_sampling: bool = False  # true: serve replaces a client's sampling with `sampling`
    edge_only_tasks: list[str] = Field(default_factory=list)  # never routed to the cloud (privacy)
    network: Literal["online", "offline"] = "online"  # offline: no cloud route at all
    # the product's prompt and answer lengths ({p50, p95, p99} tokens) from the scenario, so
    # monitor can tell when live traffic no longer looks like what was decided for
    context_tokens: dict[str, int | None] | None = None
    output_tokens: dict[str, int | None] | None = None
    embeddings: EmbeddingEngine | None = None  # absent: /v1/embeddings answers 501
    # task -> the schema or label set serve decodes that task's requests under, unless the
    # client sends its own (written when the chosen candidate ran with constrain: grammar)
    constraints: dict[str, TaskConstraint] = Field(default_factory=dict)
    update: UpdatePolicy | None = None  # model updates' probe and canary (docs/registry.md)
    # A team (schema 2, records/team.py): every edge model, `model` being the default one that
    # serves `edge` routes (and what a reader that knows one model runs); cascades of any length;
    # the budget the memory plan was checked against.
    models: list[EdgeModel] = Field(default_factory=list)
    cascades: list[Cascade] = Field(default_factory=list)
    memory: MemoryPlan | None = None

    @model_validator(mode="after")
    def _team_is_consistent(self) -> "DeployConfig":
        used = [k for k in TEAM_FIELDS if getattr(self, k)]
        if used and self.schema_version < TEAM_SCHEMA_VERSION:
            raise ValueError(f"{', '.join(used)} need schema_version {TEAM_SCHEMA_VERSION}")
        names = [m.name for m in self.models]
        if len(set(names)) < len(names):
            raise ValueError(f"models: names repeat ({', '.join(names)})")
        if self.models and not any((m.name, m.path, m.sha256) == (self.model.name, self.model.path,
                                                                   self.model.sha256)
                                   for m in self.models):
            raise ValueError(f"model {self.model.name!r} (the default) is not one of models "
                             f"({', '.join(names)}) with the same path and sha256")
        known = {DEFAULT_EDGE, CLOUD, *names}
        targets = [r.route for r in self.routes] + [s.to for c in self.cascades for s in c.steps]
        if bad := [x for x in targets if x not in known]:
            raise ValueError(f"route to {bad[0]!r}: expected edge, cloud or a model of models "
                             f"({', '.join(names) or 'none listed'})")
        first: dict[str, str] = {}
        for c in self.cascades:
            for task in c.tasks or ["*"]:
                if task in first:
                    raise ValueError(f"task {task!r} is in two cascades")
                first[task] = c.steps[0].to
        for r in self.routes:
            if r.task in first and r.route != first[r.task]:
                raise ValueError(f"task {r.task!r}: route {r.route} but its cascade starts at "
                                 f"{first[r.task]}")
        return self

    def route_for(self, task: str | None) -> str:
        """edge, cloud or a team model's name (a cascade's first step is its route)."""
        for r in self.routes:
            if r.task == task:
                return r.route
        return self.default_route

    def first_route(self, task: str | None) -> str:
        """Where a task's request goes first: its cascade's first step (a cascade without tasks
        takes every task without a route), else its route."""
        cascade = self.cascade_for(task)
        return cascade.steps[0].to if cascade is not None else self.route_for(task)

    def cascade_for(self, task: str | None) -> Cascade | None:
        """The task's own cascade, else one without tasks when the task has no route."""
        named = next((c for c in self.cascades if task in c.tasks), None)
        if named or any(r.task == task for r in self.routes):
            return named
        return next((c for c in self.cascades if not c.tasks), None)

    @property
    def is_team(self) -> bool:
        """Several edge models: a reader that runs one model only must refuse, not serve `model`
        for every task."""
        return len(self.models) > 1

    def edge_models(self) -> list[EdgeModel]:
        """Every edge model; a single-model file is its one model, always resident."""
        if self.models:
            return list(self.models)
        m = self.model
        return [EdgeModel(name=m.name, path=m.path, sha256=m.sha256, quant=m.quant,
                          backend=m.backend, pin=True)]

    def edge_model(self, route: str) -> EdgeModel | None:
        """The model a route names (`edge`: the default one); None for the cloud."""
        name = self.model.name if route == DEFAULT_EDGE else route
        return next((m for m in self.edge_models() if m.name == name), None)

    def check_memory(self, budget: int | None = None, *,
                     source: str = "deploy.yaml") -> MemoryFit:
        """The memory plan against `budget` (serve's measured one at start), else the file's;
        raises one line naming the file and the models when it does not fit."""
        if budget is None and self.memory is not None:
            budget = self.memory.budget_bytes
        fit = memory_plan(self.edge_models(), budget)
        if fit.fits is False:
            raise EdgepickError(f"{source}: memory plan: {fit.line()}")
        return fit

    @classmethod
    def load(cls, path: str | Path) -> "DeployConfig":
        data = read_yaml_mapping(path, "expected a mapping (the deploy.yaml that decide writes)",
                                 empty_ok=False)
        version = data.get("schema_version", DEPLOY_SCHEMA_VERSION)
        if version not in READABLE_VERSIONS:
            raise InputError(path, f"schema_version {version} is not supported (this release "
                                   f"reads {' and '.join(map(str, READABLE_VERSIONS))})")
        cfg = validate_input(cls, data, path)
        try:
            cfg.check_memory(source=str(path))
        except EdgepickError as e:
            raise InputError(path, str(e).removeprefix(f"{path}: "), field="models") from None
        return cfg

    def dump(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.model_dump(mode="json")
        for key in ("sampling", "embeddings", "update", "constraints", *TEAM_FIELDS):
            if not data.get(key):  # absent means greedy/client's own, no embeddings, one model:
                data.pop(key, None)  # say nothing, so a single-model file reads as it always did
        if isinstance(data.get("model"), dict) and data["model"].get("pruned") is None:
            data["model"].pop("pruned", None)  # an unpruned model's file reads the same too
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        return path
