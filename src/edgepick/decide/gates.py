"""Every hard constraint as a gate: the measured value, its 95% interval, the limit and a verdict
(docs/decide.md; seed 004 §2.3 judged with the rate's interval, not its point estimate).

pass = the whole interval on the good side of the limit, fail = the whole interval on the bad
side, undetermined = the limit inside the interval (with the number of items that would most
likely settle it), unmeasured = no measurement. Quality gates also run per task type, which is
what a hybrid edge/cloud plan routes on.
"""

from __future__ import annotations

import math

from edgepick.decide.power_figures import contended_speed
from edgepick.gate_spec import GateSpec, gate_of, gate_table
from edgepick.decide.scenarios import Scenario
from edgepick.evaluate.intervals import (Z95, items_to_settle_mean, items_to_settle_rate, verdict,
                                         wilson)
from edgepick.records.decision import CandidateSummary, Figure, LengthPoint, TaskQuality
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


def quality_figure(s: CandidateSummary, task_weights: dict[str, float]) -> Figure | None:
    """Weighted task accuracy; without task weights the overall mean with its bootstrap
    interval, with them a normal combination of the per-task intervals."""
    if not task_weights and "quality" in s.figures:
        return s.figures["quality"]
    parts = [(task_weights.get(t, 1.0), q) for t, q in s.tasks.items() if q.score is not None]
    total = sum(w for w, _ in parts)
    if total <= 0:
        return None if s.quality_overall is None else Figure(value=s.quality_overall)
    value = sum(w * q.score for w, q in parts) / total
    ses = [(w, _se(q.score_ci95)) for w, q in parts]
    if any(se is None for _, se in ses):
        return Figure(value=value, n=sum(q.n or 0 for _, q in parts))
    se = math.sqrt(sum((w * x) ** 2 for w, x in ses)) / total
    return Figure(value=value, low=max(0.0, value - Z95 * se), high=min(1.0, value + Z95 * se),
                  n=sum(q.n or 0 for _, q in parts), method="bootstrap")


def _se(ci: list[float] | None) -> float | None:
    return None if not ci else (ci[1] - ci[0]) / (2 * Z95)


def _point(v: float | None) -> Figure | None:
    return None if v is None else Figure(value=float(v))


def _fig(name: str):
    return lambda s, sc: s.figures.get(name)


def context_length(at: str | None, sc: Scenario) -> int | None:
    """The scenario's prompt length at a percentile (a tail not given: the next one below)."""
    c = sc.context_tokens
    if at is None or c is None:
        return None
    return {"p50": c.p50, "p95": c.p95 or c.p50, "p99": c.p99 or c.p95 or c.p50}[at]


def gate_length(spec: GateSpec, s: CandidateSummary, sc: Scenario) -> int | None:
    """The prompt length a gate's figure is read at: the scenario's percentile, else (no
    context_tokens) the bench's shortest prompt, the plan's base workload."""
    n = context_length(spec.at, sc)
    if n is not None or spec.at is None or spec.size:
        return n
    return min(s.by_length) if s.by_length else None


def _at(metric: str, s: CandidateSummary, sc: Scenario) -> LengthPoint | None:
    n = context_length(gate_of(metric).at, sc)
    return None if n is None else s.by_length.get(n)


def _length_or(metric: str, read, fallback):
    """With context_tokens: the figure at the gate's length (unmeasured when the bench never
    ran it); without: the headline figure, as before."""
    def fn(s: CandidateSummary, sc: Scenario) -> Figure | None:
        if sc.context_tokens is None:
            return fallback(s, sc)
        pt = _at(metric, s, sc)
        return None if pt is None else read(pt)
    return fn


def measured_memory(m: CandidateSummary | LengthPoint) -> int | None:
    """The measured need (what fit's total predicts, like with like); VmHWM for a bench stored
    before the need was measured (memory_basis says which)."""
    return m.peak_need_bytes if m.peak_need_bytes is not None else m.peak_rss_bytes


def memory_basis(s: CandidateSummary, sc: Scenario) -> str | None:
    """"need" or "VmHWM": which figure the memory gate read (None: neither measured)."""
    m = s if sc.context_tokens is None else _at("peak_memory", s, sc)
    if m is None:
        return None
    if m.peak_need_bytes is not None:
        return "need"
    return "VmHWM" if m.peak_rss_bytes is not None else None


def _e2e(metric: str, pct: str):
    """TTFT at the gate's length plus the answer's tokens at the decode speed measured there;
    [low, high] from the TTFT's and the decode's own intervals when both have one."""
    def fn(s: CandidateSummary, sc: Scenario) -> Figure | None:
        n = gate_length(gate_of(metric), s, sc)
        pt = None if n is None else s.by_length.get(n)
        if pt is None:
            return None
        if sc.output_tokens is not None:
            out = sc.output_tokens.p50 if pct == "p50" else (sc.output_tokens.p95
                                                            or sc.output_tokens.p50)
        else:
            own = s.figures.get("output_tokens_p50" if pct == "p50" else "output_tokens_p95")
            out = None if own is None else own.value
        ttft = pt.ttft_ms if pct != "p99" else _point(pt.ttft_p99_ms)
        dec = pt.decode_tps
        if ttft is None or dec is None or dec.value <= 0 or out is None:
            return None
        value = ttft.value + out / dec.value * 1000
        if None in (ttft.low, ttft.high, dec.low, dec.high) or not dec.low:
            return Figure(value=value, n=ttft.n)
        return Figure(value=value, low=ttft.low + out / dec.high * 1000,
                      high=ttft.high + out / dec.low * 1000, n=ttft.n, method="order")
    return fn


# The built-in gates' producers, by metric: what the table's `candidate_figure` is when the
# entry (data/gates.yaml) names none. Any other metric is read from `CandidateSummary.figures`.
CANDIDATE_FIGURES = {
    "ttft_p50_ms": _length_or("ttft_p50_ms", lambda pt: pt.ttft_ms, _fig("ttft_p50_ms")),
    "ttft_p99_ms": _length_or("ttft_p99_ms", lambda pt: _point(pt.ttft_p99_ms),
                              lambda s, sc: _point(s.ttft_p99_ms)),
    "decode_tps": _length_or("decode_tps", lambda pt: pt.decode_tps, _fig("decode_tps")),
    "peak_memory": _length_or("peak_memory", lambda pt: _point(measured_memory(pt)),
                              lambda s, sc: _point(measured_memory(s))),
    "e2e_p50_ms": _e2e("e2e_p50_ms", "p50"),
    "e2e_p95_ms": _e2e("e2e_p95_ms", "p95"),
    "e2e_p99_ms": _e2e("e2e_p99_ms", "p99"),
    "unacceptable_rate": _fig("unacceptable_rate"),
    "decay": lambda s, sc: _point(s.decay),
    "format_compliance": _fig("format_compliance"),
    "strict_format": _fig("strict_format"),
    "quality": lambda s, sc: quality_figure(s, sc.task_weights),
    "tool_choice_accuracy": lambda s, sc: tool_figure(s, "tool_choice_accuracy"),
    "schema_valid_rate": lambda s, sc: tool_figure(s, "schema_valid_rate"),
}


def candidate_figure(spec: GateSpec, s: CandidateSummary, sc: Scenario) -> Figure | None:
    fn = spec.candidate_figure or CANDIDATE_FIGURES.get(spec.metric) or _fig(spec.metric)
    return fn(s, sc)


def tool_figure(s: CandidateSummary, metric: str) -> Figure | None:
    """A tool_call rate with its Wilson interval, from the scorer's rate and `<metric>_n`."""
    q = s.tasks.get("tool_call")
    rate, n = (q.metrics.get(metric), q.metrics.get(f"{metric}_n")) if q else (None, None)
    if rate is None or not n:
        return None
    count = round(rate * n)
    lo, hi = wilson(count, int(n))
    return Figure(value=rate, low=lo, high=hi, n=int(n), count=count, method="wilson")


def _score(q: TaskQuality) -> Figure | None:
    return None if q.score is None else Figure(
        value=q.score, low=(q.score_ci95 or [None])[0], high=(q.score_ci95 or [None, None])[1],
        n=q.n, method="bootstrap" if q.score_ci95 else "point")


def _extra(q: TaskQuality) -> Figure | None:
    return None if q.badcases_per_1000 is None else Figure(
        value=q.badcases_per_1000, n=q.n, method="bootstrap",
        low=(q.badcases_per_1000_ci95 or [None])[0], high=(q.badcases_per_1000_ci95 or [None, None])[1])


TASK_FIGURES = {
    "unacceptable_rate": lambda q: q.unacceptable or _point(q.unacceptable_rate),
    "format_compliance": lambda q: q.format_ok or _point(q.format_ok_rate),
    "strict_format": lambda q: q.strict_format,
    "quality": _score,
    "extra_badcases_per_1000": _extra,
}


def task_figure(spec: GateSpec, q: TaskQuality) -> Figure | None:
    fn = spec.task_figure or TASK_FIGURES.get(spec.metric) or (
        lambda q: _point(q.metrics.get(spec.metric)))
    return fn(q)


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
