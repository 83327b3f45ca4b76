"""The gate table: one declarative `GateSpec` per hard constraint (docs/architecture.md, "Gate
table").

From it come the scenario's `constraints` fields (decide/scenarios.py), the gates and their
verdicts (decide/gates.py), and the gates' names and advice in the decision's and the report's
texts. Gate tables are plugins like engines and scorers: entry points in the group
`edgepick.gates`, each naming a `GateSpec` or a sequence of them. edgepick's own entry point
names the table of data/gates.yaml; another package's names its own; tests and notebooks add
one with `register_gate(spec)`.

A gate declares its producers where it is declared: `candidate_figure(summary, scenario)`,
`task_figure(task_quality)` and, for a figure evaluation measures item by item,
`item_values(candidate outcomes, reference outcomes or None)`, as functions or `"module:attr"`
names imported on first use. So a gate on a new figure is one table entry plus one producer;
decide, sequential looks and the report read every gate from this table alike. A gate with no
candidate or task producer reads the figure under its metric's name
(`CandidateSummary.figures`, `TaskQuality.metrics`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any, Callable, Literal

import yaml

from edgepick.errors import EdgepickError
from edgepick.plugins import Plugins, import_target
from edgepick.units import mib, parse_size

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
    # Producers, each a function or its "module:attr": the figure for a candidate (summary,
    # scenario) or a task (TaskQuality); None: the figure under `metric` in the summary's (or
    # the task's) figures.
    candidate_figure: Callable | str | None = None
    task_figure: Callable | str | None = None
    # per-item values in [0, 1] for sequential looks: (candidate outcomes, reference outcomes or
    # None) -> a sequence, or None when no item carries the figure. A gate that has it is
    # judged after each look.
    item_values: Callable | str | None = None

    @property
    def in_looks(self) -> bool:
        """Sequential evaluation judges this gate (evaluate/seq_gates.py)."""
        return self.item_values is not None

    def producer(self, kind: str) -> Callable | None:
        """The producer `kind` (candidate_figure | task_figure | item_values) as a function,
        imported on first use when it is named."""
        fn = getattr(self, kind)
        if isinstance(fn, str):
            if fn not in _producers:
                _producers[fn] = import_target(fn, f"gate {self.name}'s {kind}")
            return _producers[fn]
        return fn

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
                    contended=bool(e.get("contended")),
                    candidate_figure=e.get("candidate_figure"), task_figure=e.get("task_figure"),
                    item_values=e.get("item_values"))


def table_of(path: str) -> tuple[GateSpec, ...]:
    """The gate table of a YAML file inside the edgepick package (data/gates.yaml's shape)."""
    text = files("edgepick").joinpath(path).read_text(encoding="utf-8")
    return tuple(_from_yaml(k, v) for k, v in yaml.safe_load(text)["gates"].items())


_producers: dict[str, Callable] = {}  # "module:attr" -> the producer, once imported


def _as_table(name: str, obj: Any, where: str) -> tuple[GateSpec, ...]:
    specs = (obj,) if isinstance(obj, GateSpec) else obj
    if not isinstance(specs, (list, tuple)) or not all(isinstance(s, GateSpec) for s in specs):
        raise EdgepickError(f"gate table '{name}' ({where}) is not a GateSpec or a sequence "
                            "of them")
    return tuple(specs)


GATES = Plugins(GROUP, "gate table", check=_as_table)


def register_gate(spec: GateSpec) -> GateSpec:
    """Add (or replace) a gate; it is gated, explained and reported from then on."""
    GATES.register(spec.name, spec)
    return spec


def unregister_gate(name: str) -> None:
    GATES.forget(name)


def _tables(own: bool) -> list[GateSpec]:
    return [g for name in GATES.names() if GATES.is_own(name) == own for g in GATES.load(name)]


def builtin_gates() -> tuple[GateSpec, ...]:
    """edgepick's own gates: the tables its own distribution's entry points name."""
    return tuple(_tables(own=True))


def gate_table() -> dict[str, GateSpec]:
    """Every gate, edgepick's own first (data/gates.yaml order), then the other packages' and
    the registered ones; a name declared again replaces the earlier gate in its place."""
    out: dict[str, GateSpec] = {}
    for g in _tables(own=True) + _tables(own=False):
        out[g.name] = g
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
