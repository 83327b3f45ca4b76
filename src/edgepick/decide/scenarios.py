"""Scenario presets: hard constraints plus weights over the four layers of seed 000 §3.2.

Presets ship as YAML in `edgepick/data/scenarios/`; a user passes a preset name or a file of the
same shape, and a plan may override any field (deep merge) without copying the preset.
"""

from __future__ import annotations

import os
from importlib.resources import files

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from edgepick.errors import EdgepickError, InputError
from edgepick.units import parse_size
from edgepick.yaml_input import read_yaml_mapping

LAYERS = ("quality", "efficiency", "robustness", "engineering")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Constraints(_Strict):
    """Hard limits; a candidate breaking one is eliminated. None = no limit."""

    ttft_p50_ms_max: float | None = Field(None, gt=0)
    ttft_p99_ms_max: float | None = Field(None, gt=0)
    decode_tps_min: float | None = Field(None, ge=0)
    # "budget" = the device's model budget; or a size such as 1.5GiB; or bytes.
    peak_memory_max: str | int | None = "budget"
    unacceptable_rate_max: float | None = Field(None, ge=0, le=1)
    decay_max: float | None = Field(None, ge=0, le=1)
    format_compliance_min: float | None = Field(None, ge=0, le=1)
    # The bare answer with nothing around it (label alone, JSON alone): what code that parses
    # the output strictly needs, e.g. an agent's tool calls.
    strict_format_min: float | None = Field(None, ge=0, le=1)
    quality_min: float | None = Field(None, ge=0, le=1)
    # Per task type: extra badcases per 1000 requests against the reference (seed 000 §3.3).
    extra_badcases_per_1000_max: float | None = Field(None, ge=0)
    # Task tool_call (seed 004 §4): the right tool (or none), and calls valid for their schema.
    tool_choice_accuracy_min: float | None = Field(None, ge=0, le=1)
    tool_schema_valid_min: float | None = Field(None, ge=0, le=1)

    @field_validator("peak_memory_max")
    @classmethod
    def _size(cls, v):
        if v is None or v == "budget" or isinstance(v, int):
            return v
        parse_size(v)  # raises ValueError with the accepted forms
        return v

    def memory_limit(self, budget_bytes: int | None) -> int | None:
        v = self.peak_memory_max
        if v is None:
            return None
        if v == "budget":
            return budget_bytes
        return parse_size(v)


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


class RobustnessWeights(_Strict):
    sustained: float = Field(0.4, ge=0)  # 1 - decay
    length_growth: float = Field(0.3, ge=0)  # TTFT at the longest prompt / at the shortest
    tail: float = Field(0.3, ge=0)  # TTFT P99 / P50


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


def validate_scenario(data: dict, source: str) -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        raise InputError(source, msg, field=field) from None


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
    return validate_scenario(data, source)
