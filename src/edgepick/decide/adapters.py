"""Readers of the other stages' stored payloads, one per store kind, kept deliberately thin.

A stored payload is validated into its stage's own record at this boundary (`read_row`:
records/bench.py, records/evaluation.py, records/fidelity.py, records/fit.py,
records/quantize.py) and the adapters read typed fields. Every shape those records were ever
stored in still validates (tests/decide/test_adapters_typed.py loads the first release's); a row
that does not read as its record holds figures for no candidate and is left out.

Each adapter takes one record (or a payload, validated first) and `get(model, name, backend,
variant=, label=)` which returns the summary row to fill (or None when the candidate is not
wanted): `variant` is a runtime-axes candidate's settings name (RuntimeSettings.variant), `label`
the name a stage stored without naming the candidate by it (fit's). Missing figures stay None.
"""

from __future__ import annotations

from typing import Callable, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from edgepick.decide.power_figures import read_bench_energy
from edgepick.evaluate.intervals import per_item_rate, wilson
from edgepick.records.bench import BenchResult, MetricStats
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.decision import (CandidateSummary, CurvePoint, Figure, LengthPoint,
                                       TaskQuality)
from edgepick.records.evaluation import CandidateEval, EvalResult, GroupGap, Rate
from edgepick.records.fidelity import StoredFidelity
from edgepick.records.fit import StoredFit, decode_tps_at
from edgepick.records.quantize import QuantizedFile

Get = Callable[..., CandidateSummary | None]
MAX_BADCASES = 50
R = TypeVar("R", bound=BaseModel)


def typed(cls: type[R], payload: R | dict) -> R:
    """`payload` as `cls` (validated when it is still a dict)."""
    return payload if isinstance(payload, cls) else cls.model_validate(payload)


def read_row(kind: str, payload: dict) -> BaseModel | None:
    """A stored row as its stage's record; None for one that does not read as it."""
    try:
        return RECORDS[kind].model_validate(payload)
    except ValidationError:
        return None


def _set(**kw) -> dict:
    """The keywords that are set: a `get` written before variants and labels still works."""
    return {k: v for k, v in kw.items() if v is not None}


def rate_figure(r: Rate | dict | None, value: float | None = None,
                n: int | None = None) -> Figure | None:
    """A stored Rate as a Figure; payloads stored before rates existed give the plain rate and
    n, and the Wilson interval is recomputed from them."""
    if r is not None:
        r = typed(Rate, r)
    if r is not None and r.n:
        # the eval's own interval: with k samples per item it is the per-item one (the item the
        # unit, evaluate/intervals.per_item_rate), which a Wilson over count/n would not be
        return Figure(value=r.value, low=r.low, high=r.high, n=r.n, count=r.count,
                      method="wilson")
    if value is None or not n:
        return None

    count = round(float(value) * n)
    lo, hi = wilson(count, n)
    return Figure(value=float(value), low=lo, high=hi, n=n, count=count, method="wilson")


def _score_figure(g: GroupGap) -> Figure:
    ci = g.score_ci95
    return Figure(value=g.score, low=ci[0] if ci else None, high=ci[1] if ci else None, n=g.n,
                  method="bootstrap" if ci else "point")


def _task(ce: CandidateEval, ref: CandidateEval, task: str, g: GroupGap) -> TaskQuality:
    return TaskQuality(
        n=g.n, score=g.score, ref_score=g.ref_score, score_ci95=g.score_ci95,
        gap_abs=g.gap_abs, gap_rel=g.gap_rel, ci95=g.ci95,
        badcases_per_1000=g.badcases_per_1000, badcases_per_1000_ci95=g.badcases_per_1000_ci95,
        badcases=rate_figure(g.badcases, g.badcase_rate, g.n),
        ref_badcases=rate_figure(g.ref_badcases, g.ref_badcase_rate, g.n),
        format_ok_rate=g.format_ok_rate, unacceptable_rate=g.unacceptable_rate,
        unacceptable=rate_figure(g.unacceptable, g.unacceptable_rate, g.n),
        format_ok=_format_figure(ce, task), strict_format=rate_figure(g.strict_format),
        metrics=dict(g.metrics) | output_lengths(ce, task), ref_score_ci95=g.ref_score_ci95,
        ref_unacceptable=rate_figure(g.ref_unacceptable, g.ref_unacceptable_rate, g.n),
        ref_format_ok=_format_figure(ref, task), ref_strict_format=rate_figure(g.ref_strict_format),
        ref_metrics=dict(g.ref_metrics) | output_lengths(ref, task))


def eval_adapter(payload: EvalResult | dict, get: Get) -> None:
    """EvalResult (records/evaluation.py): per-task gaps and badcases, format, unacceptable
    rate, each with the interval the eval stage computed from its per-item outcomes."""
    r = typed(EvalResult, payload)
    ref = r.reference
    for ce in r.candidates:
        s = get(ce.candidate.model, ce.name or ce.candidate.label, ce.candidate.backend,
                **_set(variant=ce.candidate.settings.variant))
        if s is None:
            continue
        for task, g in ce.per_task.items():
            s.tasks[task] = _task(ce, ref, task, g)
        overall, un = ce.overall, ce.unacceptable
        s.badcases = [b.model_dump(mode="json") for b in ce.badcases[:MAX_BADCASES]]
        # without the counts (or the per-item outcomes) behind it, the stored rate as a point
        unacc = rate_figure(overall.unacceptable, un.rate, un.n)
        figs = {"unacceptable_rate": unacc or Figure(value=ce.unacceptable_rate),
                "format_compliance": _format_figure(ce, None)
                or Figure(value=overall.format_ok_rate),
                "strict_format": rate_figure(overall.strict_format),
                "quality": _score_figure(overall)}
        figs |= {k: Figure(value=v) for k, v in output_lengths(ce, None).items()}
        figs |= grammar_speed(ce)
        s.figures.update({k: v for k, v in figs.items() if v is not None})
        s.settings = ce.candidate.settings.model_dump(mode="json")
        s.constraints = dict(r.task_constraints)
        s.reference, s.reference_name = ref.candidate.model, ref.name or ref.candidate.label
        s.reference_api_key_env = ref.candidate.ref.api_key_env


def grammar_speed(ce: CandidateEval | dict) -> dict[str, Figure]:
    """A constrained candidate's decode speed on its timed items (evaluate/outputs.TIMED_ITEMS)
    under the grammar and, on the same prompts and load, free to the same length: tokens over
    seconds pooled over the items; {} when none was timed."""
    timed = [o.decode for o in typed(CandidateEval, ce).items if o.decode]
    s, free_s = sum(d["s"] for d in timed), sum(d["free_s"] for d in timed)
    if not timed or s <= 0 or free_s <= 0:
        return {}
    return {"grammar_decode_tps": Figure(value=sum(d["tokens"] for d in timed) / s, n=len(timed)),
            "free_decode_tps": Figure(value=sum(d["free_tokens"] for d in timed) / free_s,
                                      n=len(timed))}


def output_lengths(ce: CandidateEval | dict, task: str | None) -> dict[str, float]:
    """P50 and P95 of the tokens each output ran to (stored per item as `generated_tokens`;
    seed 003 §6.3), over every sample of every item of the task; {} when none was stored."""
    ce = typed(CandidateEval, ce)
    outs = [x for o in ce.items if task is None or o.task == task for x in (o.samples or [o])]
    toks = sorted(o.generated_tokens for o in outs if o.finish_reason != "error")
    if not toks:
        return {}

    return {"output_tokens_p50": float(np.percentile(toks, 50)),
            "output_tokens_p95": float(np.percentile(toks, 95))}


def _format_figure(ce: CandidateEval | dict, task: str | None) -> Figure | None:
    """Format compliance counted from the stored per-item outcomes (Wilson); with k samples per
    item, each item's share of well-formed samples, the item the unit (per-item interval)."""
    items = [o for o in typed(CandidateEval, ce).items if task is None or o.task == task]
    k = max((len(o.samples) for o in items), default=0)
    if k > 1:
        shares = [float(o.shares.get("format_ok", o.format_ok)) for o in items]
        p, lo, hi = per_item_rate(shares, k)
        return Figure(value=p, low=lo, high=hi, n=len(items), count=round(p * len(items)),
                      method="wilson")
    flags = [o.format_ok for o in items]
    if not flags:
        return None

    lo, hi = wilson(sum(flags), len(flags))
    return Figure(value=sum(flags) / len(flags), low=lo, high=hi, n=len(flags),
                  count=sum(flags), method="wilson")


def _setting(r: BenchResult, name: str):
    """A workload or runtime setting as run: the settings, or their `workload` section."""
    for where in (r.settings, r.settings.get("workload") or {}):
        if isinstance(where, dict) and where.get(name) is not None:
            return where[name]
    return None


def bench_adapter(payload: BenchResult | dict, get: Get) -> None:
    """BenchResult (records/bench.py): one configuration of a sweep. Failed runs keep their error."""
    r = typed(BenchResult, payload)
    variant = r.settings.get("variant")
    s = get(r.model_path or r.model, None, r.backend, **_set(variant=variant))
    if s is None:
        return
    if variant and len(s.settings or {}) < 2:  # its settings, even without an eval
        s.settings = {k: v for k, v in r.settings.items() if k in RuntimeSettings.model_fields}
    if r.status != "ok":
        s.bench_error = str(r.error or r.status)
        return

    read_bench_energy(r, s)  # energy, throttling, memory growth, contention
    m = r.metrics
    peak = r.metric("peak_rss_bytes", "max")
    if peak is not None:
        s.peak_rss_bytes = int(max(peak, s.peak_rss_bytes or 0))
    need = r.metric("peak_need_bytes", "max")
    if need is not None:
        s.peak_need_bytes = int(max(need, s.peak_need_bytes or 0))
    if r.sweep == "sustain" or r.sustain is not None:
        sus = r.sustain
        win = (sus.window_s if sus else None) or 1.0
        s.sustained_curve = [CurvePoint(x=win * (i + 1), y=float(v))
                             for i, v in enumerate(sus.window_tps if sus else [])]
        d = sus.decay_pct if sus else None
        s.decay = None if d is None else max(0.0, d / 100.0)
        return
    conc = _setting(r, "concurrency") or 1
    if r.sweep == "concurrency" and conc != 1:
        return
    ptoks = _setting(r, "prompt_tokens")
    ttft = r.metric("ttft_ms")
    ttft_p99 = r.metric("ttft_ms", "p99") or r.metric("ttft_ms", "max")
    if ptoks:
        gen = _setting(r, "gen_tokens")
        s.by_length[int(ptoks)] = LengthPoint(
            prompt_tokens=int(ptoks), gen_tokens=None if gen is None else int(gen),
            ttft_ms=_median_figure(m.get("ttft_ms")), ttft_p99_ms=ttft_p99,
            decode_tps=_median_figure(m.get("decode_tps")),
            peak_rss_bytes=None if peak is None else int(peak),
            peak_need_bytes=None if need is None else int(need))
    if ptoks and ttft is not None:
        s.ttft_curve = [p for p in s.ttft_curve if p.x != float(ptoks)]
        s.ttft_curve.append(CurvePoint(x=float(ptoks), y=ttft))
        s.ttft_curve.sort(key=lambda p: p.x)
    # Headline figures come from the shortest prompt at concurrency 1: the plan's base workload.
    shortest = min((p.x for p in s.ttft_curve), default=None)
    if ptoks is None or shortest is None or float(ptoks) <= shortest:
        if ttft is not None:
            s.figures["ttft_p50_ms"] = _median_figure(m["ttft_ms"])
        s.ttft_p99_ms = ttft_p99 or s.ttft_p99_ms
        if "decode_tps" in m:  # a later configuration's headline replaces it
            s.figures["decode_tps"] = _median_figure(m["decode_tps"])
        for field, metric, stat in (("prefill_tps", "prefill_tps", "median"),
                                    ("itl_p99_ms", "itl_ms", "p99"), ("load_ms", "load_ms", "median")):
            if metric in m:
                setattr(s, field, r.metric(metric, stat))
        gen = _setting(r, "gen_tokens")
        if ptoks is not None and gen is not None:
            s.bench_decode_conditions = {"fill": float(ptoks) + float(gen) / 2,
                                         "threads": _setting(r, "threads"),
                                         "n_ubatch": _setting(r, "n_ubatch")}
            align_prediction(s)


def _median_figure(stats: MetricStats | None) -> Figure | None:
    """A median with the order-statistic interval bench's repetition stopping judged
    (bench/median_ci.py: valid however the repeats stopped); for rows stored before it, min and
    max of the repeats: with n ≥ 5 repeats [min, max] covers the true median with probability
    1 − 2·0.5ⁿ (≥ 94%), a distribution-free interval."""
    if stats is None:
        return None
    if stats.median_low is not None and stats.median_high is not None:
        return Figure(value=stats.median, low=stats.median_low, high=stats.median_high,
                      n=stats.n, method="order")
    wide = stats.n >= 5
    return Figure(value=stats.median, low=stats.min if wide else None,
                  high=stats.max if wide else None, n=stats.n,
                  method="order" if wide else "point")


def fidelity_adapter(payload: StoredFidelity | dict, get: Get) -> None:
    """FidelityResult (records/fidelity.py) with the name the fidelity stage stored it under."""
    r = typed(StoredFidelity, payload)
    s = get(r.candidate, r.name, **_set(variant=r.variant))
    if s is None:
        return
    if r.variant:  # a runtime-axes candidate, compared at each of the scenario's contexts
        if _per_context(s, r):
            return  # the headline stays the longest context's (the error grows with the fill)
    s.kld_mean, s.kld_p99, s.same_top1 = r.kld_mean, r.kld_p99, r.same_top1
    s.ppl_ratio = r.ppl_ratio or (r.ppl_cand / r.ppl_ref if r.ppl_cand and r.ppl_ref else None)


FIDELITY_AT = ("kld_mean", "same_top1", "first_divergence_share")  # figures kept per context


def _per_context(s: CandidateSummary, r: StoredFidelity) -> bool:
    """Keep `r`'s figures under `<figure>@ctx<N>`; True when a longer context is already held."""
    longer = any(k.startswith("kld_mean@ctx") and int(k.rpartition("@ctx")[2]) > r.ctx
                 for k in s.figures)
    for name in FIDELITY_AT:
        value = getattr(r, name, None)
        if value is not None:
            s.figures[f"{name}@ctx{r.ctx}"] = Figure(value=value, n=r.n_scored)
    return longer


def fit_adapter(payload: StoredFit | dict, get: Get) -> None:
    """FitEstimate (records/fit.py) stored by the run pipeline for this candidate's settings."""
    r = typed(StoredFit, payload)
    s = get(r.model, None, **_set(label=r.label, variant=r.variant)) if r.model else None
    if s is None:
        return
    s.predicted_peak_bytes = r.total_bytes
    s.predicted_decode_tps = r.decode_tps_estimate
    s.predicted_decode_curve = dict(r.decode_curve)
    s.predicted_decode_conditions = {"threads": r.decode_threads, "n_ubatch": r.n_ubatch}
    band, est = r.decode_tps_band, r.decode_tps_estimate
    s.predicted_decode_band = (band[0] / est, band[1] / est) if band and est else None
    s.fit_verdict = r.verdict
    s.fallbacks = sorted(set(s.fallbacks) | set(r.fallbacks))
    align_prediction(s)


def align_prediction(s: CandidateSummary) -> None:
    """Predicted decode read at the KV fill the bench decoded at (its prompt plus half its
    generated tokens), never at the fit's half-context. A fit tied to another thread count or
    micro-batch than the bench's predicts something else: then there is no prediction to show."""
    bench, fit = s.bench_decode_conditions, s.predicted_decode_conditions
    if not bench or not s.predicted_decode_curve:
        return

    same = all(fit.get(k) in (None, bench.get(k)) for k in ("threads", "n_ubatch"))
    s.predicted_decode_tps = (round(decode_tps_at(s.predicted_decode_curve, bench["fill"]), 2)
                              if same else None)


def quantize_adapter(payload: QuantizedFile | dict, get: Get) -> None:
    """A file the quantization lab built: its fallbacks and whether the source was quantized."""
    r = typed(QuantizedFile, payload)
    s = get(r.path, None)
    if s is None:
        return
    s.quant = r.type or s.quant
    s.fallbacks = sorted(set(s.fallbacks) | {f"{f.tensor}: {f.wanted} -> {f.got}"
                                             for f in r.fallbacks})
    if "requantized" in r.model_fields_set:  # a file stored before it was recorded says nothing
        s.requantized = r.requantized


ADAPTERS: dict[str, Callable[[BaseModel | dict, Get], None]] = {
    "fit": fit_adapter, "quantize": quantize_adapter, "bench": bench_adapter,
    "eval": eval_adapter, "fidelity": fidelity_adapter,
}
RECORDS: dict[str, type[BaseModel]] = {  # the record each kind is stored as, by its stage
    "fit": StoredFit, "quantize": QuantizedFile, "bench": BenchResult, "eval": EvalResult,
    "fidelity": StoredFidelity,
}
