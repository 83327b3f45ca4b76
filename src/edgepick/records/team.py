"""A team of edge models in one `deploy.yaml` (schema 2; seed 001 §6.3: a light model
for simple queries, a medium one for routine work, preloaded or swapped; seed 003 §5.2/§6.1: a
small model takes what it can and hands the rest on).

Each model carries its file, SHA-256, runtime settings, residency (`pin`: always resident, or
on demand with an idle `ttl`) and its measured need. The memory plan: the pinned models' summed
need plus the largest on-demand one must stay within the device budget, so that any on-demand
model can always be loaded next to the pinned ones (one on-demand slot). `memory_plan` computes
it; `DeployConfig.load` and serve at start check it (`DeployConfig.check_memory`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, model_validator

from edgepick.records.candidate import RuntimeSettings
from edgepick.records.model_ref import DEFAULT_ENGINE
from edgepick.units import mib

CLOUD = "cloud"
DEFAULT_EDGE = "edge"  # a route to the file's `model` (what a single-model file always meant)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EdgeModel(_Strict):
    """One model of the team."""

    name: str  # the name routes and cascades use (the candidate's display name)
    path: str  # the GGUF its engine loads
    sha256: str  # checked before serving; a mismatch refuses to start
    quant: str | None = None
    backend: str = DEFAULT_ENGINE
    runtime: RuntimeSettings | None = None  # None: the file's top-level `runtime`
    pin: bool = False  # always resident
    ttl: int | None = Field(default=None, ge=1)  # on demand: unloaded after this many idle
    # seconds; None: unloaded only when another model needs the room
    need_bytes: int | None = Field(default=None, ge=0)  # measured need (bench/need.py)

    @model_validator(mode="after")
    def _pin_or_ttl(self) -> "EdgeModel":
        if self.pin and self.ttl is not None:
            raise ValueError(f"model {self.name!r}: pin (always resident) and ttl (unloaded "
                             "when idle) exclude each other")
        return self


class CascadeStep(_Strict):
    to: str  # a model's name, "edge" (the file's `model`) or "cloud"
    # keep this step's answer when its confidence is at least this; the last step has none
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)


class Cascade(_Strict):
    """Tries its steps in order (e.g. small → medium → cloud) for the tasks it names; empty
    `tasks`: every task without a route of its own."""

    tasks: list[str] = Field(default_factory=list)
    steps: list[CascadeStep] = Field(min_length=2)

    @model_validator(mode="after")
    def _thresholds(self) -> "Cascade":
        *head, last = self.steps
        if any(s.threshold is None for s in head):
            raise ValueError("every cascade step but the last needs its threshold")
        if last.threshold is not None:
            raise ValueError(f"the last cascade step ({last.to}) answers everything: no threshold")
        if any(s.to == CLOUD for s in head):
            raise ValueError("the cloud can only be a cascade's last step")
        return self


class MemoryPlan(_Strict):
    """The device budget the team was planned against (decide's measured budget)."""

    budget_bytes: int | None = Field(default=None, ge=1)


@dataclass(frozen=True)
class MemoryFit:
    """The pinned models' needs, the largest on-demand one, their sum against the budget."""

    pinned: list[tuple[str, int]]
    largest_on_demand: tuple[str, int] | None
    budget: int | None
    unmeasured: list[str] = field(default_factory=list)  # models without a measured need

    @property
    def total(self) -> int:
        return sum(n for _, n in self.pinned) + (self.largest_on_demand or ("", 0))[1]

    @property
    def fits(self) -> bool | None:
        """None when it cannot be said (no budget, or a need not measured)."""
        if self.budget is None or self.unmeasured:
            return None
        return self.total <= self.budget

    def line(self) -> str:
        parts = [f"pinned {name} {mib(n)}" for name, n in self.pinned]
        if self.largest_on_demand:
            name, n = self.largest_on_demand
            parts.append(f"largest on-demand {name} {mib(n)}")
        text = " + ".join(parts) + f" = {mib(self.total)}"
        if self.budget is not None:
            text += f" {'within' if self.fits else 'exceeds'} the budget {mib(self.budget)}"
        if self.unmeasured:
            text += f"; need not measured for {', '.join(self.unmeasured)}"
        return text


def memory_plan(models: list[EdgeModel], budget: int | None) -> MemoryFit:
    pinned = [(m.name, m.need_bytes) for m in models if m.pin and m.need_bytes is not None]
    on_demand = [(m.name, m.need_bytes) for m in models
                 if not m.pin and m.need_bytes is not None]
    return MemoryFit(pinned=pinned,
                     largest_on_demand=max(on_demand, key=lambda x: (x[1], x[0]), default=None),
                     budget=budget, unmeasured=[m.name for m in models if m.need_bytes is None])
