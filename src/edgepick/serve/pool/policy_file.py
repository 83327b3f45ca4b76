"""The serve policy file (`--policy`): `resources:` (the check before admission), `swap:` (hot
swap by device signals, seed 000 §4.3) and `route:` (the router's section; read by it, not here).
The sections this module owns are validated strictly; other sections are left to their owners."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from edgepick.serve.pool.admission import ResourcePolicy
from edgepick.serve.pool.signals import Signals
from edgepick.yaml_input import read_yaml_mapping, validate_input

log = logging.getLogger("edgepick.serve")
KNOWN_SECTIONS = ("resources", "swap", "route")
OTHER_OWNERS = ("sampling",)  # read from `extra` by their owners (serve/loop/references.py)


@dataclass(frozen=True)
class Bound:
    """What a condition field bounds: a `Signals` attribute, from below/above (or equal to
    it), relaxed by which `Hysteresis` margin while its rule is in force."""

    signal: str
    sense: Literal["below", "above", "equal"]
    margin: str | None = None


class Condition(BaseModel):
    """Every named bound must hold; a missing signal never holds."""

    model_config = ConfigDict(extra="forbid")

    battery_below: Annotated[float | None, Bound("battery_percent", "below", "battery")] = None
    battery_above: Annotated[float | None, Bound("battery_percent", "above", "battery")] = None
    on_ac: Annotated[bool | None, Bound("on_ac", "equal")] = None
    temperature_above: Annotated[float | None, Bound("temperature_c", "above", "temperature")] = None
    temperature_below: Annotated[float | None, Bound("temperature_c", "below", "temperature")] = None
    memory_pressure_above: Annotated[float | None, Bound("memory_pressure", "above",
                                                         "memory_pressure")] = None

    @model_validator(mode="after")
    def _not_empty(self) -> "Condition":
        if not self.model_dump(exclude_none=True):
            raise ValueError("a condition needs at least one bound, e.g. battery_below: 20")
        return self

    def holds(self, s: Signals, margin: "Hysteresis | None" = None) -> bool:
        """With `margin` (the rule is the one in force), each bound is relaxed by its margin,
        so a signal hovering at the threshold does not swap back and forth."""
        for name, field in type(self).model_fields.items():
            want = getattr(self, name)
            if want is None:
                continue
            bound = next(m for m in field.metadata if isinstance(m, Bound))
            got = getattr(s, bound.signal)
            if got is None:
                return False
            slack = getattr(margin, bound.margin) if margin and bound.margin else 0.0
            if bound.sense == "below" and not got < want + slack:
                return False
            if bound.sense == "above" and not got > want - slack:
                return False
            if bound.sense == "equal" and got != want:
                return False
        return True


class Hysteresis(BaseModel):
    model_config = ConfigDict(extra="forbid")
    battery: float = Field(5.0, ge=0)  # percentage points
    temperature: float = Field(5.0, ge=0)  # °C
    memory_pressure: float = Field(5.0, ge=0)  # PSI points


class SwapRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    when: Condition
    use: str  # a version of the served model, or NAME@VERSION from the registry
    hysteresis: Hysteresis = Field(default_factory=Hysteresis)

    @property
    def label(self) -> str:
        return self.name or self.use


class SwapPolicy(BaseModel):
    """First rule that holds wins; none holds: `default` (or the registry's active version)."""

    model_config = ConfigDict(extra="forbid")
    rules: list[SwapRule] = Field(min_length=1)
    default: str | None = None
    check_every_s: float = Field(5.0, gt=0)
    min_dwell_s: float = Field(30.0, ge=0)  # least time between two swaps
    signals_file: Path | None = None

    def choose(self, signals: Signals, current: SwapRule | None) -> SwapRule | None:
        for rule in self.rules:
            if rule.when.holds(signals, rule.hysteresis if rule is current else None):
                return rule
        return None


class ServePolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    resources: ResourcePolicy = Field(default_factory=ResourcePolicy)
    swap: SwapPolicy | None = None
    route: Any = None  # the router's section, validated by the router
    extra: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None) -> "ServePolicy":
        if path is None:
            return cls()

        data = read_yaml_mapping(path, "expected a mapping with resources:, swap: or route:")
        extra = {k: v for k, v in data.items() if k not in KNOWN_SECTIONS}
        for key in extra:
            if key not in OTHER_OWNERS:
                log.info("%s: section '%s' is not used by serve; ignored", path, key)
        policy = validate_input(cls, {k: v for k, v in data.items() if k in KNOWN_SECTIONS}, path)
        policy.extra = extra
        if policy.swap and policy.swap.signals_file and not policy.swap.signals_file.is_absolute():
            policy.swap.signals_file = Path(path).parent / policy.swap.signals_file
        return policy
