"""`deploy.yaml`: what the decision hands to `edgepick serve` (seed 000 §7.3-7.4, seed 001 §6.4).

The decision writes it; serve, route and monitor read it and nothing else of the decision, so the
data flows one way: decide → deploy.yaml → serve/route → monitor. Schema documented in
docs/deploy.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from edgepick.errors import InputError
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.update import UpdatePolicy
from edgepick.records.model_ref import DEFAULT_ENGINE

DEPLOY_SCHEMA_VERSION = 1

Verdict = Literal["pass", "fail", "undetermined", "unmeasured"]
Status = Literal["proven", "provisional", "hybrid", "none"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DeployModel(_Strict):
    name: str  # display name of the chosen candidate
    path: str  # the GGUF the edge engine loads
    sha256: str  # checked before serving; a mismatch refuses to start
    quant: str | None = None
    backend: str = DEFAULT_ENGINE


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
    route: Literal["edge", "cloud"] = "edge"
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
    # The product's own constraints (issue 26): what the edge must serve alone and how.
    sampling: Sampling | None = None  # absent: greedy / the client's own sampling
    lock_sampling: bool = False  # true: serve replaces a client's sampling with `sampling`
    edge_only_tasks: list[str] = Field(default_factory=list)  # never routed to the cloud (privacy)
    network: Literal["online", "offline"] = "online"  # offline: no cloud route at all
    # the product's prompt and answer lengths ({p50, p95, p99} tokens) from the scenario, so
    # monitor can tell when live traffic no longer looks like what was decided for
    context_tokens: dict[str, int | None] | None = None
    output_tokens: dict[str, int | None] | None = None
    embeddings: EmbeddingEngine | None = None  # absent: /v1/embeddings answers 501
    update: UpdatePolicy | None = None  # model updates' probe and canary (docs/registry.md)

    def route_for(self, task: str | None) -> str:
        for r in self.routes:
            if r.task == task:
                return r.route
        return self.default_route

    @classmethod
    def load(cls, path: str | Path) -> "DeployConfig":
        from edgepick.yaml_input import read_yaml_mapping, validate_input

        data = read_yaml_mapping(path, "expected a mapping (the deploy.yaml that decide writes)",
                                 empty_ok=False)
        version = data.get("schema_version", DEPLOY_SCHEMA_VERSION)
        if version != DEPLOY_SCHEMA_VERSION:
            raise InputError(path, f"schema_version {version} is not supported "
                                   f"(this release reads {DEPLOY_SCHEMA_VERSION})")
        return validate_input(cls, data, path)

    def dump(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.model_dump(mode="json")
        for key in ("sampling", "embeddings", "update"):
            if data.get(key) is None:
                data.pop(key, None)  # absent means greedy/client's own, no embeddings: say nothing
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        return path
