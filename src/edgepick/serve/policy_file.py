"""The serve policy file (`--policy`): `resources:` (the check before admission), `swap:` (hot
swap by device signals, seed 000 §4.3) and `route:` (issue 17's router; read by it, not here).
The sections this module owns are validated strictly; other sections are left to their owners."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from edgepick.serve.admission import ResourcePolicy
from edgepick.serve.signals import Signals

log = logging.getLogger("edgepick.serve")
KNOWN_SECTIONS = ("resources", "swap", "route")
OTHER_OWNERS = ("sampling",)  # read from `extra` by their owners (serve/references.py)


class Condition(BaseModel):
    """Every named bound must hold; a missing signal never holds."""

    model_config = ConfigDict(extra="forbid")

    battery_below: float | None = None
    battery_above: float | None = None
    on_ac: bool | None = None
    temperature_above: float | None = None
    temperature_below: float | None = None
    memory_pressure_above: float | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> "Condition":
        if not self.model_dump(exclude_none=True):
            raise ValueError("a condition needs at least one bound, e.g. battery_below: 20")
        return self

    def holds(self, s: Signals, margin: "Hysteresis | None" = None) -> bool:
        """With `margin` (the rule is the one in force), each bound is relaxed by its margin,
        so a signal hovering at the threshold does not swap back and forth."""
        mb = margin.battery if margin else 0.0
        mt = margin.temperature if margin else 0.0
        mp = margin.memory_pressure if margin else 0.0
        checks = []
        if self.battery_below is not None:
            checks.append(s.battery_percent is not None and s.battery_percent < self.battery_below + mb)
        if self.battery_above is not None:
            checks.append(s.battery_percent is not None and s.battery_percent > self.battery_above - mb)
        if self.on_ac is not None:
            checks.append(s.on_ac is not None and s.on_ac == self.on_ac)
        if self.temperature_above is not None:
            checks.append(s.temperature_c is not None and s.temperature_c > self.temperature_above - mt)
        if self.temperature_below is not None:
            checks.append(s.temperature_c is not None and s.temperature_c < self.temperature_below + mt)
        if self.memory_pressure_above is not None:
            checks.append(s.memory_pressure is not None
                          and s.memory_pressure > self.memory_pressure_above - mp)
        return all(checks)


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
    route: Any = None  # issue 17's section, validated by the router
    extra: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None) -> "ServePolicy":
        if path is None:
            return cls()
        from edgepick.yaml_input import read_yaml_mapping, validate_input

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
