"""Scenario presets: hard constraints plus weights over the four layers of seed 000 §3.2.

Presets ship as YAML in `edgepick/data/scenarios/`; a user passes a preset name or a file of the
same shape, and a plan may override any field (deep merge) without copying the preset.
"""

from __future__ import annotations

import difflib
import os
import sys
from importlib.resources import files
from typing import Literal

from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, ValidationError,
                      create_model, model_validator)

from edgepick.gate_spec import aliases, builtin_gates, gate_table
from edgepick.errors import EdgepickError, InputError, input_error
from edgepick.units import parse_size
from edgepick.yaml_input import read_yaml_mapping

LAYERS = ("quality", "efficiency", "robustness", "engineering")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _ConstraintsBase(BaseModel):
    """Hard limits; a candidate breaking one is eliminated. None = no limit.

    The fields are the gate table's (gate_spec.py, data/gates.yaml): one per gate, named
    as the gate. A gate registered after import is accepted too, read with `limit(name)`.
    """

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _gates(cls, data):
        if not isinstance(data, dict):
            return data
        table, old = gate_table(), aliases()
        out = {}
        for key, v in data.items():
            name = old.get(key, key)
            if name != key:
                print(f"note: constraints.{key} is deprecated; write {name}", file=sys.stderr)
            spec = table.get(name)
            if spec is None:
                close = difflib.get_close_matches(name, list(table), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise ValueError(f"unknown constraint '{key}'{hint}")
            try:
                spec.check_limit(v)
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
            out[name] = v
        return out

    def limit(self, name: str):
        """The scenario's limit for a gate (None: not set), registered late or not."""
        v = getattr(self, name, None)
        if v is None and self.model_extra:
            v = self.model_extra.get(name)
        return v

    def memory_limit(self, budget_bytes: int | None) -> int | None:
        v = self.peak_memory_max
        if v is None:
            return None
        if v == "budget":
            return budget_bytes
        return v if isinstance(v, int) else parse_size(v)


def _constraint_fields() -> dict:
    out = {}
    for g in builtin_gates():
        if g.size:
            out[g.name] = (str | int | None, "budget")
        else:
            out[g.name] = (float | None, None)
    return out


Constraints = create_model("Constraints", __base__=_ConstraintsBase, __module__=__name__,
                           **_constraint_fields())


class LayerWeights(_Strict):
    quality: float = Field(0.25, ge=0)
    efficiency: float = Field(0.25, ge=0)
    robustness: float = Field(0.25, ge=0)
    engineering: float = Field(0.25, ge=0)

    def normalised(self) -> dict[str, float]:
        total = sum(getattr(self, k) for k in LAYERS) or 1.0
        return {k: getattr(self, k) / total for k in LAYERS}


class QualityWeights(_Strict):
    accuracy: float = Field(0.5, ge=0)
    format_compliance: float = Field(0.2, ge=0)
    acceptable: float = Field(0.2, ge=0)  # 1 - unacceptable rate
    fidelity: float = Field(0.1, ge=0)  # exp(-mean KLD) against the reference


class EfficiencyWeights(_Strict):
    decode_tps: float = Field(0.4, ge=0)
    ttft_p50_ms: float = Field(0.3, ge=0)
    peak_memory: float = Field(0.2, ge=0)
    prefill_tps: float = Field(0.1, ge=0)
    # J per generated token, idle subtracted: where nobody's power was measured the
    # metric drops out of the layer, so the other weights decide as before
    energy_per_token: float = Field(0.2, ge=0)


class RobustnessWeights(_Strict):
    sustained: float = Field(0.4, ge=0)  # 1 - decay
    length_growth: float = Field(0.3, ge=0)  # TTFT at the longest prompt / at the shortest
    tail: float = Field(0.3, ge=0)  # TTFT P99 / P50


class ContextTokens(_Strict):
    """The product's prompt lengths in tokens (seed 000 §7.1: know P50/P95/P99 of your context)."""

    p50: int = Field(ge=1)
    p95: int | None = Field(None, ge=1)
    p99: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _ordered(self):
        vals = [v for v in (self.p50, self.p95, self.p99) if v is not None]
        if vals != sorted(vals):
            raise ValueError("expected p50 ≤ p95 ≤ p99")
        return self

    def at(self, pct: str) -> int | None:
        """The length at p50 / p95 / p99 (None: not given; no other length stands in)."""
        return {"p50": self.p50, "p95": self.p95, "p99": self.p99}[pct]


class OutputTokens(_Strict):
    """How many tokens the product's answers run to (seed 003 §6.3: AR answers must be short)."""

    p50: int = Field(ge=1)
    p95: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _ordered(self):
        if self.p95 is not None and self.p95 < self.p50:
            raise ValueError("expected p50 ≤ p95")
        return self


class ScenarioSampling(_Strict):
    """The deployment's sampling (seed 004 §6.2: temperature about 0.7, repetition penalty
    1.1-1.2). `samples`: outputs per eval item (the eval side, docs/evaluate.md)."""

    temperature: float | None = Field(None, ge=0)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: int | None = Field(None, ge=0)
    repeat_penalty: float | None = Field(None, gt=0)
    samples: int = Field(1, ge=1)


class CloudSide(_Strict):
    """What the cloud path costs: its price and the latency it is allowed (seed 000 §6.1: a
    cloud round trip takes 100 ms and more)."""

    price_per_1k_tokens: float | None = Field(None, ge=0)
    latency_budget_ms: float | None = Field(None, gt=0)


class Scenario(_Strict):
    name: str
    description: str = ""
    description_zh: str = ""  # shown in the Chinese report
    constraints: Constraints = Field(default_factory=Constraints)
    weights: LayerWeights = Field(default_factory=LayerWeights)
    quality_weights: QualityWeights = Field(default_factory=QualityWeights)
    efficiency_weights: EfficiencyWeights = Field(default_factory=EfficiencyWeights)
    robustness_weights: RobustnessWeights = Field(default_factory=RobustnessWeights)
    # Relative weight of each task type in the overall accuracy; unlisted tasks weigh 1.
    task_weights: dict[str, float] = Field(default_factory=dict)
    # Share of requests per task type in production (normalised); empty: the eval set's mix.
    # A hybrid plan's cloud share and expected badcases are computed under it.
    task_mix: dict[str, float] = Field(default_factory=dict)
    # The product (docs/decide.md "The product"): every field optional, absent keeps
    # the decision as it was.
    context_tokens: ContextTokens | None = None  # bench and gate at these prompt lengths
    context_from: str | None = None  # prompts.jsonl whose lengths give context_tokens
    output_tokens: OutputTokens | None = None  # answer lengths: bench and end-to-end latency
    sampling: ScenarioSampling | None = None  # None: greedy (eval) / the client's own (serve)
    lock_sampling: bool = False  # serve replaces a client's sampling with `sampling`
    network: Literal["online", "offline"] = "online"  # offline: no cloud route at all
    max_cloud_share: float | None = Field(None, ge=0, le=1)  # of requests, under the task mix
    edge_only_tasks: list[str] = Field(default_factory=list)  # private: never to the cloud
    cloud: CloudSide = Field(default_factory=CloudSide)
    # The file it was read from (a preset's own file): `context_from` is relative to it. Not
    # data: no dump, key or stored decision holds it.
    _source: str | None = PrivateAttr(None)

    @property
    def source(self) -> str | None:
        return self._source

    def cloud_allowed(self, task: str) -> str | None:
        """Why `task` may not go to the cloud (None: it may)."""
        if self.network == "offline":
            return "network: offline"
        if task in self.edge_only_tasks:
            return "edge_only_tasks"
        return None


def preset_dir():
    return files("edgepick").joinpath("data/scenarios")


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in preset_dir().iterdir() if p.name.endswith(".yaml"))


def _read(path: str) -> dict:
    return read_yaml_mapping(path, "a scenario must be a mapping with name, constraints, weights",
                             empty_ok=False)


def deep_merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for k, v in override.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _check_constraints(data: dict, source: str) -> None:
    """An unknown constraint or a limit out of its gate's bounds, as one line naming the field
    (the model's own validator sees the whole mapping and could only name `constraints`)."""
    cons = data.get("constraints")
    if not isinstance(cons, dict):
        return
    table, old = gate_table(), aliases()
    for key, v in cons.items():
        spec = table.get(old.get(key, key))
        if spec is None:
            close = difflib.get_close_matches(key, list(table), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise InputError(source, f"unknown field{hint}", field=f"constraints.{key}")
        try:
            spec.check_limit(v)
        except ValueError as exc:
            raise InputError(source, str(exc), field=f"constraints.{key}") from None


def validate_scenario(data: dict, source: str) -> Scenario:
    _check_constraints(data, source)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise input_error(source, exc) from None


def scenario_source(name_or_path: str) -> tuple[dict, str]:
    if name_or_path in preset_names():
        path = str(preset_dir().joinpath(f"{name_or_path}.yaml"))
        return _read(path), path
    if os.path.isfile(name_or_path):
        return _read(name_or_path), name_or_path
    raise EdgepickError(f"unknown scenario '{name_or_path}': not a preset or a file "
                        f"(presets: {', '.join(preset_names())})")


def load_scenario(name_or_path: str, overrides: dict | None = None) -> Scenario:
    data, source = scenario_source(name_or_path)
    if overrides:
        data = deep_merge(data, overrides)
    sc = validate_scenario(data, source)
    sc._source = source
    return sc
