"""Readers of the other stages' stored payloads, one per store kind, kept deliberately thin.

Each adapter takes one stored payload and `get(model, name, backend)` which returns the summary row
to fill (or None when the candidate is not wanted). Missing fields stay None.
"""

from __future__ import annotations

from typing import Any, Callable

from edgepick.records.decision import (CandidateSummary, CurvePoint, Figure, LengthPoint,
                                       TaskQuality)

Get = Callable[..., CandidateSummary | None]
MAX_BADCASES = 50


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _stat(metrics: dict, name: str, stat: str = "median") -> float | None:
    m = metrics.get(name)
    if isinstance(m, dict):
        return _num(m.get(stat))
    return _num(m)


def _cand(payload: dict) -> tuple[str | None, str | None, str | None]:
    c = payload.get("candidate") if isinstance(payload.get("candidate"), dict) else {}
    model = c.get("model") or payload.get("model")
    name = c.get("label") or payload.get("name") or payload.get("label")
    return model, name, c.get("backend") or payload.get("backend")


def rate_figure(r: Any, value: Any = None, n: Any = None) -> Figure | None:
    """A stored Rate (records/evaluation.py) as a Figure; payloads stored before rates carried
    their counts give the plain rate and n, and the Wilson interval is recomputed from them."""
    if isinstance(r, dict) and r.get("n") and _num(r.get("low")) is not None \
            and _num(r.get("high")) is not None:
        # the eval's own interval: with k samples per item it is the per-item one (the item the
        # unit, evaluate/intervals.per_item_rate), which a Wilson over count/n would not be
        return Figure(value=float(r["value"]), low=float(r["low"]), high=float(r["high"]),
                      n=r["n"], count=r.get("count"), method="wilson")
    if isinstance(r, dict) and r.get("n"):
        count, n, value = r.get("count"), r["n"], r["value"]
    elif _num(value) is not None and isinstance(n, int) and n > 0:
        count = round(float(value) * n)
    else:
        return None
    from edgepick.evaluate.intervals import wilson

    lo, hi = wilson(count, n) if count is not None else (None, None)
    return Figure(value=float(value), low=lo, high=hi, n=n, count=count, method="wilson")


def _score_figure(g: dict, ref: bool = False) -> Figure | None:
    pre = "ref_" if ref else ""
    v, ci = _num(g.get(f"{pre}score")), g.get(f"{pre}score_ci95")
    if v is None:
        return None
    return Figure(value=v, low=ci[0] if ci else None, high=ci[1] if ci else None, n=g.get("n"),
                  method="bootstrap" if ci else "point")


def eval_adapter(payload: dict, get: Get) -> None:
    """EvalResult (records/evaluation.py): per-task gaps and badcases, format, unacceptable
    rate, each with the interval the eval stage computed from its per-item outcomes."""
    ref = payload.get("reference") or {}
    ref_model, ref_name, _ = _cand(ref)
    for ce in payload.get("candidates", []):
        model, name, backend = _cand(ce)
        s = get(model, ce.get("name") or name, backend) if model else None
        if s is None:
            continue
        for task, g in (ce.get("per_task") or {}).items():
            s.tasks[task] = TaskQuality(
                n=g.get("n"), score=_num(g.get("score")), ref_score=_num(g.get("ref_score")),
                score_ci95=g.get("score_ci95"),
                gap_abs=_num(g.get("gap_abs")), gap_rel=_num(g.get("gap_rel")), ci95=g.get("ci95"),
                badcases_per_1000=_num(g.get("badcases_per_1000")),
                badcases_per_1000_ci95=g.get("badcases_per_1000_ci95"),
                badcases=rate_figure(g.get("badcases"), g.get("badcase_rate"), g.get("n")),
                ref_badcases=rate_figure(g.get("ref_badcases"), g.get("ref_badcase_rate"), g.get("n")),
                format_ok_rate=_num(g.get("format_ok_rate")),
                unacceptable_rate=_num(g.get("unacceptable_rate")),
                unacceptable=rate_figure(g.get("unacceptable"), g.get("unacceptable_rate"), g.get("n")),
                format_ok=_format_figure(ce, task), strict_format=rate_figure(g.get("strict_format")),
                metrics=_numbers(g.get("metrics")) | output_lengths(ce, task),
                ref_score_ci95=g.get("ref_score_ci95"),
                ref_unacceptable=rate_figure(g.get("ref_unacceptable"),
                                             g.get("ref_unacceptable_rate"), g.get("n")),
                ref_format_ok=_format_figure(ref, task),
                ref_strict_format=rate_figure(g.get("ref_strict_format")),
                ref_metrics=_numbers(g.get("ref_metrics")) | output_lengths(ref, task))
        overall = ce.get("overall") or {}
        s.badcases = list(ce.get("badcases") or [])[:MAX_BADCASES]
        un = ce.get("unacceptable") or {}
        # without the counts (or the per-item outcomes) behind it, the stored rate as a point
        unacc = rate_figure(overall.get("unacceptable"), un.get("rate"), un.get("n"))
        figs = {"unacceptable_rate": unacc or _point(ce.get("unacceptable_rate")),
                "format_compliance": _format_figure(ce, None)
                or _point(overall.get("format_ok_rate")),
                "strict_format": rate_figure(overall.get("strict_format")),
                "quality": _score_figure(overall)}
        figs |= {k: Figure(value=v) for k, v in output_lengths(ce, None).items()}
        s.figures.update({k: v for k, v in figs.items() if v is not None})
        cand = ce.get("candidate") if isinstance(ce.get("candidate"), dict) else {}
        s.settings = cand.get("settings") or s.settings
        s.reference, s.reference_name = ref_model, ref.get("name") or ref_name


def _point(v: Any) -> Figure | None:
    return None if _num(v) is None else Figure(value=float(v))


def _numbers(d: Any) -> dict[str, float]:
    return {k: float(v) for k, v in (d or {}).items() if _num(v) is not None}


def output_lengths(ce: dict, task: str | None) -> dict[str, float]:
    """P50 and P95 of the tokens each output ran to (stored per item as `generated_tokens`;
    seed 003 §6.3), over every sample of every item of the task; {} when none was stored."""
    outs = [x for o in ce.get("items") or [] if task is None or o.get("task") == task
            for x in (o.get("samples") or [o])]
    toks = sorted(int(o["generated_tokens"]) for o in outs
                  if isinstance(o.get("generated_tokens"), int) and o.get("finish_reason") != "error")
    if not toks:
        return {}
    import numpy as np

    return {"output_tokens_p50": float(np.percentile(toks, 50)),
            "output_tokens_p95": float(np.percentile(toks, 95))}


def _format_figure(ce: dict, task: str | None) -> Figure | None:
    """Format compliance counted from the stored per-item outcomes (Wilson); with k samples per
    item, each item's share of well-formed samples, the item the unit (per-item interval)."""
    items = [o for o in ce.get("items") or [] if task is None or o.get("task") == task]
    k = max((len(o.get("samples") or []) for o in items), default=0)
    if k > 1:
        from edgepick.evaluate.intervals import per_item_rate

        shares = [float((o.get("shares") or {}).get("format_ok", bool(o.get("format_ok"))))
                  for o in items]
        p, lo, hi = per_item_rate(shares, k)
        return Figure(value=p, low=lo, high=hi, n=len(items), count=round(p * len(items)),
                      method="wilson")
    flags = [bool(o.get("format_ok")) for o in items]
    if not flags:
        return None
    from edgepick.evaluate.intervals import wilson

    lo, hi = wilson(sum(flags), len(flags))
    return Figure(value=sum(flags) / len(flags), low=lo, high=hi, n=len(flags),
                  count=sum(flags), method="wilson")


def _setting(payload: dict, name: str):
    st = payload.get("settings") or {}
    for where in (st, st.get("workload") or {}, payload.get("workload") or {}, payload):
        if isinstance(where, dict) and where.get(name) is not None:
            return where[name]
    return None


def bench_adapter(payload: dict, get: Get) -> None:
    """BenchResult (records/bench.py): one configuration of a sweep. Failed runs keep their error."""
    model = payload.get("model_path") or payload.get("model")
    s = get(model, payload.get("label"), payload.get("backend")) if model else None
    if s is None:
        return
    if payload.get("status") not in (None, "ok"):
        s.bench_error = str(payload.get("error") or payload.get("status"))
        return
    from edgepick.decide.power_figures import read_bench_energy

    read_bench_energy(payload, s)  # energy, throttling, memory growth, contention (issue 28)
    m = payload.get("metrics") or {}
    peak = _stat(m, "peak_rss_bytes", "max") or _stat(m, "peak_rss_bytes")
    if peak is not None:
        s.peak_rss_bytes = int(max(peak, s.peak_rss_bytes or 0))
    need = _stat(m, "peak_need_bytes", "max") or _stat(m, "peak_need_bytes")
    if need is not None:
        s.peak_need_bytes = int(max(need, s.peak_need_bytes or 0))
    sweep = payload.get("sweep")
    sustain = payload.get("sustain")
    if sweep == "sustain" or isinstance(sustain, dict):
        sustain = sustain or {}
        win = float(sustain.get("window_s") or 1.0)
        s.sustained_curve = [CurvePoint(x=win * (i + 1), y=float(v))
                             for i, v in enumerate(sustain.get("window_tps") or [])]
        d = _num(sustain.get("decay_pct"))
        s.decay = None if d is None else max(0.0, d / 100.0)
        return
    conc = _setting(payload, "concurrency") or 1
    if sweep == "concurrency" and conc != 1:
        return
    ptoks = _setting(payload, "prompt_tokens")
    ttft = _stat(m, "ttft_ms")
    if ptoks:
        gen = _setting(payload, "gen_tokens")
        s.by_length[int(ptoks)] = LengthPoint(
            prompt_tokens=int(ptoks), gen_tokens=None if gen is None else int(gen),
            ttft_ms=_median_figure(m.get("ttft_ms")),
            ttft_p99_ms=_stat(m, "ttft_ms", "p99") or _stat(m, "ttft_ms", "max"),
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
            s.figures["ttft_p50_ms"] = _median_figure(m.get("ttft_ms")) or Figure(value=ttft)
        s.ttft_p99_ms = _stat(m, "ttft_ms", "p99") or _stat(m, "ttft_ms", "max") or s.ttft_p99_ms
        if "decode_tps" in m:  # a later configuration's headline replaces it, even unmeasured
            f = _median_figure(m["decode_tps"]) or _point(_stat(m, "decode_tps"))
            if f is None:
                s.figures.pop("decode_tps", None)
            else:
                s.figures["decode_tps"] = f
        for field, metric, stat in (("prefill_tps", "prefill_tps", "median"),
                                    ("itl_p99_ms", "itl_ms", "p99"), ("load_ms", "load_ms", "median")):
            if metric in m:
                setattr(s, field, _stat(m, metric, stat))
        gen = _setting(payload, "gen_tokens")
        if ptoks is not None and gen is not None:
            s.bench_decode_conditions = {"fill": float(ptoks) + float(gen) / 2,
                                         "threads": _setting(payload, "threads"),
                                         "n_ubatch": _setting(payload, "n_ubatch")}
            align_prediction(s)


def _median_figure(stats: Any) -> Figure | None:
    """A median with min and max of its repeats: with n ≥ 5 repeats [min, max] covers the true
    median with probability 1 − 2·0.5ⁿ (≥ 94%), a distribution-free interval."""
    if not isinstance(stats, dict) or _num(stats.get("median")) is None:
        return None
    n = stats.get("n")
    wide = isinstance(n, int) and n >= 5
    return Figure(value=float(stats["median"]), low=_num(stats.get("min")) if wide else None,
                  high=_num(stats.get("max")) if wide else None, n=n,
                  method="order" if wide else "point")


def fidelity_adapter(payload: dict, get: Get) -> None:
    model = payload.get("candidate") if isinstance(payload.get("candidate"), str) else None
    if model is None:
        model, _, _ = _cand(payload)
    s = get(model, payload.get("name")) if model else None
    if s is None:
        return
    s.kld_mean = _num(payload.get("kld_mean"))
    s.kld_p99 = _num(payload.get("kld_p99"))
    s.same_top1 = _num(payload.get("same_top1"))
    ppl_c, ppl_r = _num(payload.get("ppl_cand")), _num(payload.get("ppl_ref"))
    s.ppl_ratio = _num(payload.get("ppl_ratio")) or (ppl_c / ppl_r if ppl_c and ppl_r else None)


def fit_adapter(payload: dict, get: Get) -> None:
    """FitEstimate (records/fit.py) stored by the run pipeline for this candidate's settings."""
    s = get(payload["model"], None) if payload.get("model") else None
    if s is None:
        return
    s.predicted_peak_bytes = payload.get("total_bytes")
    s.predicted_decode_tps = _num(payload.get("decode_tps_estimate"))
    s.predicted_decode_curve = {int(k): float(v) for k, v in
                                (payload.get("decode_curve") or {}).items()}
    s.predicted_decode_conditions = {"threads": payload.get("decode_threads"),
                                     "n_ubatch": payload.get("n_ubatch")}
    band, est = payload.get("decode_tps_band"), _num(payload.get("decode_tps_estimate"))
    s.predicted_decode_band = (band[0] / est, band[1] / est) if band and est else None
    s.fit_verdict = payload.get("verdict")
    s.fallbacks = sorted(set(s.fallbacks) | set(payload.get("fallbacks") or []))
    align_prediction(s)


def align_prediction(s: CandidateSummary) -> None:
    """Predicted decode read at the KV fill the bench decoded at (its prompt plus half its
    generated tokens), never at the fit's half-context. A fit tied to another thread count or
    micro-batch than the bench's predicts something else: then there is no prediction to show."""
    bench, fit = s.bench_decode_conditions, s.predicted_decode_conditions
    if not bench or not s.predicted_decode_curve:
        return
    from edgepick.records.fit import decode_tps_at

    same = all(fit.get(k) in (None, bench.get(k)) for k in ("threads", "n_ubatch"))
    s.predicted_decode_tps = (round(decode_tps_at(s.predicted_decode_curve, bench["fill"]), 2)
                              if same else None)


def quantize_adapter(payload: dict, get: Get) -> None:
    """A file the quantization lab built: its fallbacks and whether the source was quantized."""
    path = payload.get("path")
    s = get(path, None) if path else None
    if s is None:
        return
    s.quant = payload.get("type") or s.quant
    s.fallbacks = sorted(set(s.fallbacks) | {
        f"{f.get('tensor')}: {f.get('wanted')} -> {f.get('got')}" if isinstance(f, dict) else str(f)
        for f in payload.get("fallbacks") or []})
    if "requantized" in payload:
        s.requantized = bool(payload["requantized"])


ADAPTERS: dict[str, Callable[[dict, Get], None]] = {
    "fit": fit_adapter, "quantize": quantize_adapter, "bench": bench_adapter,
    "eval": eval_adapter, "fidelity": fidelity_adapter,
}
