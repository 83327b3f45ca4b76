"""Every hard constraint as a gate: the measured value, its 95% interval, the limit and a verdict
(docs/decide.md; seed 004 §2.3 judged with the rate's interval, not its point estimate).

pass = the whole interval on the good side of the limit, fail = the whole interval on the bad
side, undetermined = the limit inside the interval (with the number of items that would most
likely settle it), unmeasured = no measurement. Quality gates also run per task type, which is
what a hybrid edge/cloud plan routes on.
"""

from __future__ import annotations

import math

from edgepick.decide.gate_figures import (context_length, gate_length, measured_memory,
                                          memory_basis, quality_figure)
from edgepick.decide.power_figures import contended_speed
from edgepick.gate_spec import GateSpec, gate_of, gate_table
from edgepick.decide.scenarios import Scenario
from edgepick.evaluate.intervals import Z95, items_to_settle_mean, items_to_settle_rate, verdict
from edgepick.records.decision import CandidateSummary, Figure, TaskQuality
from edgepick.records.deploy import Gate
from edgepick.units import parse_size


def candidate_specs() -> list[GateSpec]:
    return [g for g in gate_table().values() if "candidate" in g.scope]


def task_specs() -> list[GateSpec]:
    return [g for g in gate_table().values() if "task" in g.scope]


def constraint_of(metric: str) -> str:
    """The gate (constraint) name of a metric; the metric itself when no gate reads it."""
    g = gate_of(metric)
    return g.name if g else metric


def fmt_value(constraint: str, v: float | None) -> str:
    g = gate_of(constraint)
    if v is None:
        return "-"
    return g.show(v) if g else f"{v:.0f}"


def gate_text(g: Gate) -> str:
    """'6.7% [1.8%, 21.3%]' — the value and its interval as shown everywhere."""
    c = constraint_of(g.metric)
    text = fmt_value(c, g.value)
    if g.low is not None and g.high is not None and (g.low, g.high) != (g.value, g.value):
        text += f" [{fmt_value(c, g.low)}, {fmt_value(c, g.high)}]"
    if g.basis == "VmHWM" and g.value is not None:
        text += " (VmHWM, no need stored)"
    elif g.basis == "need" and g.value is not None:
        text += " (need)"
    return text


def candidate_figure(spec: GateSpec, s: CandidateSummary, sc: Scenario) -> Figure | None:
    """The figure `spec` gates a candidate on: its producer's, else `figures[metric]`."""
    fn = spec.producer("candidate_figure")
    return fn(s, sc) if fn is not None else s.figures.get(spec.metric)


def task_figure(spec: GateSpec, q: TaskQuality) -> Figure | None:
    """The figure `spec` gates one task type on: its producer's, else `metrics[metric]`."""
    fn = spec.producer("task_figure")
    if fn is not None:
        return fn(q)
    v = q.metrics.get(spec.metric)
    return None if v is None else Figure(value=float(v))


def settle(fig: Figure, limit: float) -> int | None:
    """How many MORE items would most likely settle an undetermined verdict (None: cannot say;
    the observed value sits on the limit, or the figure is not counted over items)."""
    total = None
    if fig.method == "wilson" and fig.n and fig.count is not None:
        total = items_to_settle_rate(fig.count, fig.n, limit)
    elif fig.method == "bootstrap" and fig.n and fig.low is not None and fig.high is not None:
        sd = (fig.high - fig.low) / (2 * Z95) * math.sqrt(fig.n)
        total = items_to_settle_mean(fig.value, sd, limit)
    return None if total is None else max(1, total - fig.n)


def make_gate(metric: str, fig: Figure | None, limit: float, direction: str,
              at_tokens: int | None = None) -> Gate:
    if fig is None:
        return Gate(metric=metric, limit=limit, direction=direction, verdict="unmeasured",
                    at_tokens=at_tokens)
    v = verdict(fig.value, fig.low, fig.high, limit, direction)
    return Gate(metric=metric, value=fig.value, low=fig.low, high=fig.high, limit=limit,
                direction=direction, verdict=v, at_tokens=at_tokens,
                items_to_settle=settle(fig, limit) if v == "undetermined" else None)


def limits(sc: Scenario, budget: int | None) -> dict[str, float | None]:
    """Gate name -> the scenario's limit as a number (None: not set)."""
    c = sc.constraints
    out = {}
    for g in gate_table().values():
        if g.size:
            mem = c.memory_limit(budget) if g.name == "peak_memory_max" else c.limit(g.name)
            out[g.name] = None if mem is None or mem == "budget" else float(
                mem if not isinstance(mem, str) else parse_size(mem))
        else:
            v = c.limit(g.name)
            out[g.name] = None if v is None else float(v)
    return out


def candidate_gates(s: CandidateSummary, sc: Scenario, budget: int | None) -> list[Gate]:
    """One gate per constraint the scenario sets, in the gate table's order."""
    lim = limits(sc, budget)
    out = [contended_speed(make_gate(g.metric, candidate_figure(g, s, sc), lim[g.name],
                                     g.direction, gate_length(g, s, sc)), s)
           for g in candidate_specs() if lim[g.name] is not None]
    for g in out:
        if g.metric == "peak_memory" and g.value is not None:
            g.basis = memory_basis(s, sc)
    return out


def task_gates(s: CandidateSummary, sc: Scenario) -> dict[str, list[Gate]]:
    """Per task type, the task-scoped gates the scenario sets (for hybrid routing)."""
    lim = limits(sc, None)
    out: dict[str, list[Gate]] = {}
    for task, q in sorted(s.tasks.items()):
        gates = []
        for g in task_specs():
            if lim.get(g.name) is None:
                continue
            fig = task_figure(g, q)
            if fig is None and g.task_optional:
                continue  # e.g. no item of this task has a strict form
            gates.append(make_gate(g.metric, fig, lim[g.name], g.direction))
        out[task] = gates
    return out


def ruled_out_before_eval(gates: list[Gate]) -> Gate | None:
    """The gate that rules a candidate out whatever its quality: the first settled fail among
    the gates no hybrid routes around (not task-scoped) and evaluation does not measure
    (memory, speed, decay, power). Sequential evaluation skips such a candidate (plan's eval
    stage); the decision and the report say so (texts.reasons_text). A speed gate that failed
    on a contended measurement is undetermined (power_figures.contended_speed), never this."""
    for g in gates:
        spec = gate_of(g.metric)
        if spec is None or "task" in spec.scope or spec.in_looks:
            continue
        if g.verdict == "fail":
            return g
    return None
