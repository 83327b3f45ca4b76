"""Every hard constraint as a gate: the measured value, its 95% interval, the limit and a verdict
(SPEC §8; seed 004 §2.3 judged with the rate's interval, not its point estimate).

pass = the whole interval on the good side of the limit, fail = the whole interval on the bad
side, undetermined = the limit inside the interval (with the number of items that would most
likely settle it), unmeasured = no measurement. Quality gates also run per task type, which is
what a hybrid edge/cloud plan routes on.
"""

from __future__ import annotations

import math

from edgepick.decide.scenarios import Scenario
from edgepick.evaluate.intervals import (Z95, items_to_settle_mean, items_to_settle_rate, verdict,
                                         wilson)
from edgepick.records.decision import CandidateSummary, Figure, TaskQuality
from edgepick.records.deploy import Gate

# constraint -> (metric, direction, display format; None = bytes)
GATES: dict[str, tuple[str, str, str | None]] = {
    "ttft_p50_ms_max": ("ttft_p50_ms", "max", "{:.0f} ms"),
    "ttft_p99_ms_max": ("ttft_p99_ms", "max", "{:.0f} ms"),
    "decode_tps_min": ("decode_tps", "min", "{:.1f} tok/s"),
    "peak_memory_max": ("peak_memory", "max", None),
    "unacceptable_rate_max": ("unacceptable_rate", "max", "{:.1%}"),
    "decay_max": ("decay", "max", "{:.1%}"),
    "format_compliance_min": ("format_compliance", "min", "{:.1%}"),
    "strict_format_min": ("strict_format", "min", "{:.1%}"),
    "quality_min": ("quality", "min", "{:.1%}"),
    "tool_choice_accuracy_min": ("tool_choice_accuracy", "min", "{:.1%}"),
    "tool_schema_valid_min": ("schema_valid_rate", "min", "{:.1%}"),
}
# Gates that a task type can pass or fail on its own (hybrid routing).
TASK_GATES = ("unacceptable_rate_max", "format_compliance_min", "strict_format_min", "quality_min",
              "extra_badcases_per_1000_max")
CONSTRAINT_OF = {m: c for c, (m, _, _) in GATES.items()} | {
    "extra_badcases_per_1000": "extra_badcases_per_1000_max"}


def fmt_value(constraint: str, v: float | None) -> str:
    if v is None:
        return "-"
    fmt = GATES.get(constraint, ("", "", "{:.0f}"))[2]
    return f"{v / 2**20:.0f} MiB" if fmt is None else fmt.format(v)


def gate_text(g: Gate) -> str:
    """'6.7% [1.8%, 21.3%]' — the value and its interval as shown everywhere."""
    c = CONSTRAINT_OF.get(g.metric, g.metric)
    text = fmt_value(c, g.value)
    if g.low is not None and g.high is not None and (g.low, g.high) != (g.value, g.value):
        text += f" [{fmt_value(c, g.low)}, {fmt_value(c, g.high)}]"
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


def candidate_figures(s: CandidateSummary, sc: Scenario) -> dict[str, Figure | None]:
    f = s.figures
    return {
        "ttft_p50_ms": f.get("ttft_p50_ms") or _point(s.ttft_p50_ms),
        "ttft_p99_ms": _point(s.ttft_p99_ms),
        "decode_tps": f.get("decode_tps") or _point(s.decode_tps),
        "peak_memory": _point(s.peak_rss_bytes),
        "unacceptable_rate": f.get("unacceptable_rate") or _point(s.unacceptable_rate),
        "decay": _point(s.decay),
        "format_compliance": f.get("format_compliance") or _point(s.format_compliance),
        "strict_format": f.get("strict_format"),
        "quality": quality_figure(s, sc.task_weights),
        "tool_choice_accuracy": tool_figure(s, "tool_choice_accuracy"),
        "schema_valid_rate": tool_figure(s, "schema_valid_rate"),
    }


def tool_figure(s: CandidateSummary, metric: str) -> Figure | None:
    """A tool_call rate with its Wilson interval, from the scorer's rate and `<metric>_n`."""
    q = s.tasks.get("tool_call")
    rate, n = (q.metrics.get(metric), q.metrics.get(f"{metric}_n")) if q else (None, None)
    if rate is None or not n:
        return None
    count = round(rate * n)
    lo, hi = wilson(count, int(n))
    return Figure(value=rate, low=lo, high=hi, n=int(n), count=count, method="wilson")


def task_figures(q: TaskQuality) -> dict[str, Figure | None]:
    score = None if q.score is None else Figure(
        value=q.score, low=(q.score_ci95 or [None])[0], high=(q.score_ci95 or [None, None])[1],
        n=q.n, method="bootstrap" if q.score_ci95 else "point")
    extra = None if q.badcases_per_1000 is None else Figure(
        value=q.badcases_per_1000, n=q.n, method="bootstrap",
        low=(q.badcases_per_1000_ci95 or [None])[0], high=(q.badcases_per_1000_ci95 or [None, None])[1])
    return {"unacceptable_rate": q.unacceptable or _point(q.unacceptable_rate),
            "format_compliance": q.format_ok or _point(q.format_ok_rate),
            "strict_format": q.strict_format, "quality": score, "extra_badcases_per_1000": extra}


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


def make_gate(metric: str, fig: Figure | None, limit: float, direction: str) -> Gate:
    if fig is None:
        return Gate(metric=metric, limit=limit, direction=direction, verdict="unmeasured")
    v = verdict(fig.value, fig.low, fig.high, limit, direction)
    return Gate(metric=metric, value=fig.value, low=fig.low, high=fig.high, limit=limit,
                direction=direction, verdict=v,
                items_to_settle=settle(fig, limit) if v == "undetermined" else None)


def limits(sc: Scenario, budget: int | None) -> dict[str, float | None]:
    c = sc.constraints
    out = {name: getattr(c, name, None) for name in GATES if name != "peak_memory_max"}
    mem = c.memory_limit(budget)
    out["peak_memory_max"] = None if mem is None else float(mem)
    out["extra_badcases_per_1000_max"] = c.extra_badcases_per_1000_max
    return out


def candidate_gates(s: CandidateSummary, sc: Scenario, budget: int | None) -> list[Gate]:
    """One gate per constraint the scenario sets, in GATES order."""
    figs = candidate_figures(s, sc)
    lim = limits(sc, budget)
    return [make_gate(metric, figs[metric], lim[c], direction)
            for c, (metric, direction, _) in GATES.items() if lim[c] is not None]


def task_gates(s: CandidateSummary, sc: Scenario) -> dict[str, list[Gate]]:
    """Per task type, the quality gates the scenario sets (for hybrid routing)."""
    lim = limits(sc, None)
    out: dict[str, list[Gate]] = {}
    for task, q in sorted(s.tasks.items()):
        figs = task_figures(q)
        gates = []
        for c in TASK_GATES:
            if lim.get(c) is None:
                continue
            metric = GATES[c][0] if c in GATES else "extra_badcases_per_1000"
            direction = GATES[c][1] if c in GATES else "max"
            if metric == "strict_format" and figs[metric] is None:
                continue  # no item of this task has a strict form
            gates.append(make_gate(metric, figs[metric], lim[c], direction))
        out[task] = gates
    return out
