"""Hard constraints, then a weighted score over normalised metrics (seed 000 §3.2, §7).

Normalisation (docs/decide.md): each metric is compared with the best value among the candidates
that survived the hard constraints — value / best for higher-is-better metrics, best / value for
lower-is-better ones — so the best gets 1.0 and one half as fast gets 0.5. Ratio-to-best rather
than min-max because min-max maps the worse of two candidates to 0 however small the gap.
Engineering facts are already absolute scores in [0, 1] and are used as they are.
"""

from __future__ import annotations

import math

from edgepick.decide.engineering import engineering_facts
from edgepick.gate_spec import gate_of
from edgepick.decide.gates import candidate_gates, gate_text, measured_memory
from edgepick.decide.scenarios import LAYERS, Scenario
from edgepick.decide.texts import gate_label, violation_text
from edgepick.records.decision import CandidateSummary, Violation
from edgepick.records.deploy import Gate
from edgepick.units import mib

HIGHER, LOWER = "higher", "lower"
# The score's metrics are raw_metrics' keys; a scenario's layer weights (decide/scenarios.py)
# say which layer each counts in. A metric a gate reads scores in the gate's direction (a
# `max` gate: lower is better); of the others, these score better the lower they are.
LOWER_NO_GATE = frozenset({"energy_per_token", "length_growth", "tail"})


def lower_is_better(metric: str) -> bool:
    spec = gate_of(metric)
    return spec.direction == "max" if spec is not None else metric in LOWER_NO_GATE


def weighted_accuracy(s: CandidateSummary, task_weights: dict[str, float]) -> float | None:
    parts = [(task_weights.get(t, 1.0), q.score) for t, q in s.tasks.items() if q.score is not None]
    total = sum(w for w, _ in parts)
    if total > 0:
        return sum(w * v for w, v in parts) / total
    return s.quality_overall


def raw_metrics(s: CandidateSummary, sc: Scenario) -> dict[str, float | None]:
    """Each score metric of one candidate, as measured (None: not measured)."""
    memory = measured_memory(s)
    return {
        "accuracy": weighted_accuracy(s, sc.task_weights),  # task accuracy
        "format_compliance": s.format_compliance,
        "acceptable": None if s.unacceptable_rate is None else 1.0 - s.unacceptable_rate,
        "fidelity": None if s.kld_mean is None else math.exp(-s.kld_mean),  # exp(-mean KLD)
        "decode_tps": s.decode_tps,
        "ttft_p50_ms": s.ttft_p50_ms,
        "peak_memory": None if memory is None else float(memory),
        "prefill_tps": s.prefill_tps,
        "energy_per_token": s.energy_per_token_j,  # per generated token
        "sustained": None if s.decay is None else max(0.0, 1.0 - s.decay),  # speed kept
        "length_growth": s.ttft_growth,  # TTFT growth with prompt length
        "tail": s.tail_ratio,  # TTFT P99/P50
    }


def _v(constraint: str, metric: str, value=None, limit=0.0, **kw) -> Violation:
    v = Violation(constraint=constraint, metric=metric, value=value, limit=limit, text="", **kw)
    v.text = violation_text(v, "en")
    return v


def check_constraints(s: CandidateSummary, sc: Scenario,
                      budget: int | None) -> tuple[list[Violation], list[str], list[Gate]]:
    """Violations (failed gates, each with the measured value, its interval and the limit, plus
    failures to run), the constraints left unmeasured, and every gate with its verdict."""
    c = sc.constraints
    gates = candidate_gates(s, sc, budget)
    violations, unchecked = [], []
    if s.bench_error:
        violations.append(_v("runs", "runs on the target", detail=s.bench_error))
    if c.peak_memory_max == "budget" and budget is None:
        unchecked.append("peak_memory_budget")
    measured = [s.decode_tps, s.ttft_p50_ms, s.peak_rss_bytes, s.quality_overall, s.kld_mean]
    if s.skipped and s.fit_verdict != "no":
        violations.append(_v("skipped", "measurements", detail=s.skipped))
    elif all(v is None for v in measured) and not s.bench_error and s.fit_verdict != "no":
        violations.append(_v("measured", "measurements"))
    if s.fit_verdict == "no" and s.peak_rss_bytes is None and not s.bench_error:
        pred = s.predicted_peak_bytes
        violations.append(_v("fit", "predicted peak memory",
                             value=None if pred is None else float(pred),
                             limit=float(budget or 0), unit="bytes",
                             value_text=mib(pred) if pred else "",
                             limit_text=mib(budget) if budget else "", op=">"))
    for g in gates:
        spec = gate_of(g.metric)
        name = spec.name
        if g.verdict == "unmeasured":
            unchecked.append(name)
        elif g.verdict == "fail":
            unit = "bytes" if spec.format == "bytes" else ""
            limit_text = gate_text(Gate(metric=g.metric, value=g.limit))
            violations.append(_v(name, gate_label(g), value=float(g.value), limit=float(g.limit),
                                 unit=unit, op=">" if g.direction == "max" else "<",
                                 value_text=gate_text(g), limit_text=limit_text))
    return violations, unchecked, gates


def layer_metric_weights(sc: Scenario) -> dict[str, dict[str, float]]:
    return {
        "quality": sc.quality_weights.model_dump(),
        "efficiency": sc.efficiency_weights.model_dump(),
        "robustness": sc.robustness_weights.model_dump(),
    }


def normalise(values: dict[str, float | None], column: list[float], direction: str) -> dict:
    best = max(column) if direction == HIGHER else min(column)
    out = {}
    for name, v in values.items():
        if v is None:
            out[name] = None
        elif direction == HIGHER:
            out[name] = 1.0 if best <= 0 else max(0.0, v) / best
        else:
            out[name] = 1.0 if v <= 0 else (best / v if best > 0 else 0.0)
    return out


def score(survivors: list[CandidateSummary], sc: Scenario) -> dict[str, dict]:
    """name -> {"score", "layers", "metrics", "notes"} for the candidates that passed; notes are
    the metrics that were measured for others but not for this one (scored 0)."""
    raw = {s.candidate: raw_metrics(s, sc) for s in survivors}
    norm: dict[str, dict[str, float | None]] = {s.candidate: {} for s in survivors}
    for metric in next(iter(raw.values()), {}):
        direction = LOWER if lower_is_better(metric) else HIGHER
        vals = {n: r[metric] for n, r in raw.items()}
        column = [v for v in vals.values() if v is not None]
        if not column:
            continue  # measured for nobody: the metric drops out of its layer
        for n, v in normalise(vals, column, direction).items():
            norm[n][metric] = v
    weights = layer_metric_weights(sc)
    layer_w = sc.weights.normalised()
    out: dict[str, dict] = {}
    for s in survivors:
        n = s.candidate
        notes: list[str] = []
        layers: dict[str, float | None] = {}
        for layer in LAYERS:
            if layer == "engineering":
                facts = [v for v in engineering_facts(s).values() if v is not None]
                layers[layer] = sum(facts) / len(facts) if facts else None
                continue
            parts = []
            for metric, w in weights[layer].items():
                if metric not in norm[n] or w <= 0:
                    continue
                v = norm[n][metric]
                if v is None:
                    notes.append(metric)
                    v = 0.0
                parts.append((w, v))
            tw = sum(w for w, _ in parts)
            layers[layer] = sum(w * v for w, v in parts) / tw if tw > 0 else None
        present = {k: w for k, w in layer_w.items() if layers[k] is not None}
        total_w = sum(present.values())
        total = sum(w * layers[k] for k, w in present.items()) / total_w if total_w > 0 else 0.0
        out[n] = {"score": round(total, 4), "layers": layers, "metrics": norm[n], "notes": notes}
    return out
