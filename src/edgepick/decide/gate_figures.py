"""The figures the built-in gates read: one producer function per gate whose figure is not
simply `CandidateSummary.figures[metric]`, named in that gate's entry in data/gates.yaml
(`candidate_figure`, `task_figure`), and the helpers they share with decide/gates.py."""

from __future__ import annotations

import math

from edgepick.gate_spec import GateSpec, gate_of
from edgepick.decide.scenarios import Scenario
from edgepick.evaluate.intervals import Z95, wilson
from edgepick.records.decision import CandidateSummary, Figure, LengthPoint, TaskQuality


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


def _length_or(metric: str, s: CandidateSummary, sc: Scenario, read, headline
               ) -> Figure | None:
    """With context_tokens: the figure at the gate's length (unmeasured when the bench never
    ran it); without: the headline figure."""
    if sc.context_tokens is None:
        return headline()
    pt = _at(metric, s, sc)
    return None if pt is None else read(pt)


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


def _e2e(metric: str, pct: str, s: CandidateSummary, sc: Scenario) -> Figure | None:
    """TTFT at the gate's length plus the answer's tokens at the decode speed measured there;
    [low, high] from the TTFT's and the decode's own intervals when both have one."""
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


def tool_figure(s: CandidateSummary, metric: str) -> Figure | None:
    """A tool_call rate with its Wilson interval, from the scorer's rate and `<metric>_n`."""
    q = s.tasks.get("tool_call")
    rate, n = (q.metrics.get(metric), q.metrics.get(f"{metric}_n")) if q else (None, None)
    if rate is None or not n:
        return None
    count = round(rate * n)
    lo, hi = wilson(count, int(n))
    return Figure(value=rate, low=lo, high=hi, n=int(n), count=count, method="wilson")


# The built-in gates' producers, named by their entries in data/gates.yaml (`candidate_figure`,
# `task_figure`). A gate whose entry names none reads the figure under its metric's name from
# CandidateSummary.figures (a task's from TaskQuality.metrics).

def ttft_p50_ms(s: CandidateSummary, sc: Scenario) -> Figure | None:
    return _length_or("ttft_p50_ms", s, sc, lambda pt: pt.ttft_ms,
                      lambda: s.figures.get("ttft_p50_ms"))


def ttft_p99_ms(s: CandidateSummary, sc: Scenario) -> Figure | None:
    return _length_or("ttft_p99_ms", s, sc, lambda pt: _point(pt.ttft_p99_ms),
                      lambda: _point(s.ttft_p99_ms))


def decode_tps(s: CandidateSummary, sc: Scenario) -> Figure | None:
    return _length_or("decode_tps", s, sc, lambda pt: pt.decode_tps,
                      lambda: s.figures.get("decode_tps"))


def peak_memory(s: CandidateSummary, sc: Scenario) -> Figure | None:
    return _length_or("peak_memory", s, sc, lambda pt: _point(measured_memory(pt)),
                      lambda: _point(measured_memory(s)))


def e2e_p50_ms(s: CandidateSummary, sc: Scenario) -> Figure | None:
    return _e2e("e2e_p50_ms", "p50", s, sc)


def e2e_p95_ms(s: CandidateSummary, sc: Scenario) -> Figure | None:
    return _e2e("e2e_p95_ms", "p95", s, sc)


def e2e_p99_ms(s: CandidateSummary, sc: Scenario) -> Figure | None:
    return _e2e("e2e_p99_ms", "p99", s, sc)


def decay(s: CandidateSummary, sc: Scenario) -> Figure | None:
    return _point(s.decay)


def quality(s: CandidateSummary, sc: Scenario) -> Figure | None:
    return quality_figure(s, sc.task_weights)


def tool_choice_accuracy(s: CandidateSummary, sc: Scenario) -> Figure | None:
    return tool_figure(s, "tool_choice_accuracy")


def schema_valid_rate(s: CandidateSummary, sc: Scenario) -> Figure | None:
    return tool_figure(s, "schema_valid_rate")


def task_unacceptable_rate(q: TaskQuality) -> Figure | None:
    return q.unacceptable or _point(q.unacceptable_rate)


def task_format_compliance(q: TaskQuality) -> Figure | None:
    return q.format_ok or _point(q.format_ok_rate)


def task_strict_format(q: TaskQuality) -> Figure | None:
    return q.strict_format


def task_quality(q: TaskQuality) -> Figure | None:
    return None if q.score is None else Figure(
        value=q.score, low=(q.score_ci95 or [None])[0], high=(q.score_ci95 or [None, None])[1],
        n=q.n, method="bootstrap" if q.score_ci95 else "point")


def task_extra_badcases(q: TaskQuality) -> Figure | None:
    return None if q.badcases_per_1000 is None else Figure(
        value=q.badcases_per_1000, n=q.n, method="bootstrap",
        low=(q.badcases_per_1000_ci95 or [None])[0], high=(q.badcases_per_1000_ci95 or [None, None])[1])
