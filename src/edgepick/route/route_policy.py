"""The `route:` section of `--policy` YAML: the mode, the cloud, the cascade's confidence, and
the signals weighed with thresholds and hysteresis (seed 000 §6.3-6.4, seed 001 §6.3).

A device signal turns on when it crosses `on` and off only when it crosses back past `off`, so
a battery hovering at 20% does not flip the route on every request. The weights of the signals
that are on add up; at `cloud_at` or more the request goes to the cloud, when the network allows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from edgepick.errors import InputError, input_error
from edgepick.records.deploy import CloudEndpoint
from edgepick.route.confidence import ConfidenceSettings, FormatValidator
from edgepick.yaml_input import read_yaml_mapping

Mode = Literal["edge_first", "cloud_first", "by_task", "cascade"]
MODES = ("edge_first", "cloud_first", "by_task", "cascade")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Rule(_Strict):
    """One device signal: on at `on`, off again past `off` (`below`: low values count)."""

    weight: float = 1.0
    on: float
    off: float | None = None  # None: the same as `on` (no hysteresis)
    below: bool = False

    @model_validator(mode="after")
    def _band(self) -> "Rule":
        off = self.on if self.off is None else self.off
        if (self.below and off < self.on) or (not self.below and off > self.on):
            raise ValueError("off must lie on the safe side of on (hysteresis band)")
        return self


class Signals(_Strict):
    battery: Rule | None = Rule(weight=1.0, on=20, off=25, below=True)  # %, seed 000 §6.4
    temperature: Rule | None = Rule(weight=1.0, on=75, off=70)  # °C
    memory_pressure: Rule | None = Rule(weight=1.0, on=30, off=15)  # PSI some avg10, %
    input_share: Rule | None = Rule(weight=1.0, on=0.7)  # prompt tokens / window
    weak_task: float = 1.0  # weight when the task is one of `cloud_tasks`
    cloud_tasks: list[str] = Field(default_factory=lambda: ["math", "code"])  # seed 000 §3.3


class Network(_Strict):
    probe_url: str | None = None  # default: the cloud's /models
    probe_timeout_s: float = Field(1.0, gt=0)
    probe_interval_s: float = Field(10.0, gt=0)
    max_latency_ms: float = Field(800.0, gt=0)  # slower than this counts as offline
    clear_latency_ms: float | None = None  # back online below this (default 0.75 × max)


class Cloud(CloudEndpoint):
    first_chunk_timeout_s: float = Field(5.0, gt=0)  # a stream with no first chunk by then fails
    timeout_s: float = Field(60.0, gt=0)  # a whole non-streamed answer


class RoutePolicy(_Strict):
    router: str = "default"  # the `edgepick.routers` entry point serve loaded (this one)
    mode: Mode = "edge_first"
    cloud: Cloud | None = None
    confidence: ConfidenceSettings = Field(default_factory=ConfidenceSettings)
    # edge_first escalates an unsure edge too; off, edge_first streams at once and
    # escalates only on errors, overload and the validator.
    escalate_low_confidence: bool = True
    validator: FormatValidator | None = None
    # Streaming with a cascade: `buffer` waits for the whole edge answer (confidence known, no
    # early tokens); `decide_first` streams from the path chosen before the first chunk, with
    # no confidence check.
    stream_cascade: Literal["buffer", "decide_first"] = "buffer"
    signals: Signals = Field(default_factory=Signals)
    cloud_at: float = Field(1.0, gt=0)  # summed weight of active signals that sends to the cloud
    network: Network = Field(default_factory=Network)
    signals_file: str | None = None
    task_header: str = "x-edgepick-task"
    task_classifier: str | None = None  # "module:function", called with the request body
    default_task: str | None = None
    # x-edgepick-force-route / x-edgepick-mock-failure (tests): read by serve for every router
    allow_forced_route: bool = False
    context_budget_share: float | None = Field(0.7, gt=0, le=1)  # None: no context builder

    @model_validator(mode="after")
    def _needs_cloud(self) -> "RoutePolicy":
        if self.mode in ("cloud_first",) and self.cloud is None:
            raise ValueError(f"mode '{self.mode}' needs a cloud (route.cloud.url or --cloud)")
        return self


def load_policy(path: str | Path) -> RoutePolicy:
    """The `route:` section of a policy file (a missing section is the default policy)."""
    data = read_yaml_mapping(path, "expected a mapping with 'route:' and/or 'swap:' sections")
    return policy_from(data.get("route") or {}, path)


def policy_from(section: dict, path: str | Path = "<policy>") -> RoutePolicy:
    if not isinstance(section, dict):
        raise InputError(path, "expected a mapping", field="route")
    try:
        return RoutePolicy.model_validate(section)
    except ValidationError as exc:
        raise input_error(path, exc, field_prefix="route") from None


class Latches:
    """The on/off state of each device signal, kept between requests (the hysteresis)."""

    def __init__(self) -> None:
        self.on: dict[str, bool] = {}

    def update(self, name: str, rule: Rule, value: float | None) -> bool:
        if value is None:
            self.on[name] = False
            return False
        off = rule.on if rule.off is None else rule.off
        was = self.on.get(name, False)
        if rule.below:
            now = value <= off if was else value <= rule.on
        else:
            now = value >= off if was else value >= rule.on
        self.on[name] = now
        return now
