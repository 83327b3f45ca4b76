"""The gate table: one declarative `GateSpec` per hard constraint (docs/architecture.md, "Gate
table").

From it come the scenario's `constraints` fields (decide/scenarios.py), the gates and their
verdicts (decide/gates.py), and the gates' names and advice in the decision's and the report's
texts. The built-in gates are the entries of data/gates.yaml; a plugin adds one with
`register_gate(spec)` or an entry point in the group `edgepick.gates` (a `GateSpec`, a list of
them, or a callable returning either). Adding a gate is one entry plus the producer of its
metric: a function that reads the figure off a candidate's summary (or a task's quality), or
nothing when the figure already sits in `CandidateSummary.figures` under the metric's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files
from typing import Callable, Literal

import yaml

from edgepick.units import mib

Direction = Literal["max", "min"]
Scope = Literal["candidate", "task"]
INTERVALS = ("wilson", "bootstrap", "order", "point")
GROUP = "edgepick.gates"


@dataclass(frozen=True)
class GateSpec:
    name: str  # the scenario constraint, e.g. "ttft_p50_ms_max"
    metric: str  # the figure it reads, e.g. "ttft_p50_ms"
    direction: Direction  # max: value ≤ limit passes; min: value ≥ limit
    format: str = "{:.3g}"  # str.format of a value, or "bytes" (shown in MiB)
    scope: tuple[Scope, ...] = ("candidate",)
    interval: str = "point"  # wilson | bootstrap | order | point
    label: dict[str, str] = field(default_factory=dict)  # {"en": …, "zh": …}
    advice: dict[str, str] | None = None  # what would have to change when every candidate fails
    bounds: tuple[float | None, float | None] = (None, None)  # a limit must lie within
    size: bool = False  # the limit may be "budget" (the device's) or a size such as "1.5GiB"
    aliases: tuple[str, ...] = ()  # deprecated spellings accepted in scenario YAML
    task_optional: bool = False  # a task without the figure has no such gate (not unmeasured)
    at: str | None = None  # the context percentile it is read at: p50 | p95 | p99
    # a speed figure a busy host slows: failing on a contended measurement it is undetermined
    # (decide/power_figures.contended_speed), so it never rules a candidate out before evaluation
    contended: bool = False
    # measured by evaluation per item, so sequential looks judge it after each look (built-in
    # metrics: evaluate/seq_gates.values makes their per-item values)
    sequential: bool = False
    # Producers: the figure for a candidate (summary, scenario) or a task (TaskQuality). None:
    # the figure under `metric` in the summary's (or task's) figures.
    candidate_figure: Callable | None = None
    task_figure: Callable | None = None
    # per-item values in [0, 1] for sequential looks: (candidate outcomes, reference outcomes or
    # None) -> a sequence, or None when no item carries the figure. A plugin gate on an eval
    # figure gives it; the looks then stop on the gate like on a built-in one.
    item_values: Callable | None = None

    @property
    def in_looks(self) -> bool:
        """Sequential evaluation judges this gate (evaluate/seq_gates.py)."""
        return self.sequential or self.item_values is not None

    def __post_init__(self) -> None:
        if self.direction not in ("max", "min"):
            raise ValueError(f"gate {self.name}: direction must be max or min")
        if self.interval not in INTERVALS:
            raise ValueError(f"gate {self.name}: interval must be one of {', '.join(INTERVALS)}")
        if self.at not in (None, "p50", "p95", "p99"):
            raise ValueError(f"gate {self.name}: at must be p50, p95 or p99")
        if not set(self.scope) <= {"candidate", "task"} or not self.scope:
            raise ValueError(f"gate {self.name}: scope must be candidate and/or task")

    def text(self, lang: str = "en") -> str:
        return self.label.get(lang) or self.label.get("en") or self.name

    def show(self, v: float | None) -> str:
        if v is None:
            return "-"
        return mib(v) if self.format == "bytes" else self.format.format(v)

    def check_limit(self, v) -> None:
        """Raise ValueError (the scenario's one line) for a limit outside the gate's bounds."""
        if v is None:
            return
        if self.size and (v == "budget" or isinstance(v, (str, int)) and not isinstance(v, bool)):
            if isinstance(v, str) and v != "budget":
                from edgepick.units import parse_size

                parse_size(v)
            return
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError("expected a number")
        lo, hi = self.bounds
        if lo is not None and v < lo:
            raise ValueError(f"must be ≥ {lo}")
        if hi is not None and v > hi:
            raise ValueError(f"must be ≤ {hi}")


def _from_yaml(name: str, e: dict) -> GateSpec:
    return GateSpec(name=name, metric=e["metric"], direction=e["direction"],
                    format=e.get("format", "{:.3g}"), scope=tuple(e.get("scope") or ["candidate"]),
                    interval=e.get("interval", "point"), label=dict(e.get("label") or {}),
                    advice=e.get("advice"), bounds=tuple(e.get("bounds") or (None, None)),
                    size=bool(e.get("size")), aliases=tuple(e.get("aliases") or ()),
                    task_optional=bool(e.get("task_optional")), at=e.get("at"),
                    contended=bool(e.get("contended")), sequential=bool(e.get("sequential")))


@lru_cache(maxsize=1)
def builtin_gates() -> tuple[GateSpec, ...]:
    text = files("edgepick").joinpath("data/gates.yaml").read_text(encoding="utf-8")
    return tuple(_from_yaml(k, v) for k, v in yaml.safe_load(text)["gates"].items())


_registered: dict[str, GateSpec] = {}
_plugins_loaded = False


def register_gate(spec: GateSpec) -> GateSpec:
    """Add (or replace) a gate; it is gated, explained and reported from then on."""
    _registered[spec.name] = spec
    return spec


def unregister_gate(name: str) -> None:
    _registered.pop(name, None)


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from edgepick.plugins import Plugins

    plugins = Plugins(GROUP, "gate")  # the one registry helper: lazy, one line on a bad target
    for name in plugins.names():
        obj = plugins.load(name)
        obj = obj() if callable(obj) and not isinstance(obj, GateSpec) else obj
        for spec in obj if isinstance(obj, (list, tuple)) else [obj]:
            if isinstance(spec, GateSpec):
                _registered.setdefault(spec.name, spec)


def gate_table() -> dict[str, GateSpec]:
    """Every gate, built-in first (data/gates.yaml order), then the registered ones."""
    _load_plugins()
    out = {g.name: g for g in builtin_gates()}
    out.update(_registered)
    return out


def gate_of(name_or_metric: str) -> GateSpec | None:
    """The gate named so, or the one reading that metric."""
    table = gate_table()
    if name_or_metric in table:
        return table[name_or_metric]
    return next((g for g in table.values() if g.metric == name_or_metric), None)


def aliases() -> dict[str, str]:
    """Deprecated constraint spelling -> the gate's name."""
    return {a: g.name for g in gate_table().values() for a in g.aliases}
