"""The report's tables as plain rows, shared by the Markdown and HTML writers and the exports.
Words and derived figures (reasons, gate labels, the memory need, difficulty) are the decide
stage's, read from the decision's texts."""

from __future__ import annotations

from edgepick.records.decision import CandidateSummary, Decision
from edgepick.records.decision_texts import DecisionTexts
from edgepick.report.i18n import tr
from edgepick.units import mib, pct, pct_ci, whole_pct


def _f(v: float | None, nm: str, fmt: str, unit: str = "") -> str:
    return nm if v is None else fmt.format(v) + (f" {unit}" if unit else "")


def fig_pct(fig, fallback: float | None, nm: str) -> str:
    """'6.7% [1.8%, 21.3%]' when the figure has its interval; `fallback` when there is none."""
    if fig is None:
        return pct(fallback, nm)
    return pct_ci(fig.value, fig.low, fig.high, nm)


def _per_1000(fig, nm: str) -> str:
    if fig is None:
        return nm
    if fig.low is None or fig.high is None:
        return f"{fig.value * 1000:.0f}"
    return f"{fig.value * 1000:.0f} [{fig.low * 1000:.0f}, {fig.high * 1000:.0f}]"


def template_table(summaries: list[CandidateSummary], texts: DecisionTexts,
                   lang: str) -> tuple[list[str], list[list[str]]]:
    """Seed 000 §7.3: one row per metric, one column per candidate."""
    nm = tr("not_measured", lang)
    header = [tr("metric", lang)] + [s.candidate for s in summaries]
    rows: list[tuple[str, list[str]]] = []

    def add(key: str, fn) -> None:
        rows.append((tr(key, lang), [fn(s) for s in summaries]))

    add("params", lambda s: nm if s.params is None else f"{s.params / 1e6:.0f} M")
    add("quant", lambda s: s.quant or nm)
    add("weights_mem", lambda s: mib(s.weights_bytes, nm))
    add("peak_mem", lambda s: tr("failed", lang) if s.bench_error
        else mib(texts.of(s.candidate).memory_need, nm))
    add("ttft_p50", lambda s: _f(s.ttft_p50_ms, nm, "{:.0f}", "ms"))
    add("ttft_p99", lambda s: _f(s.ttft_p99_ms, nm, "{:.0f}", "ms"))
    add("decode", lambda s: _f(s.decode_tps, nm, "{:.1f}", "tok/s"))
    add("prefill", lambda s: _f(s.prefill_tps, nm, "{:.0f}", "tok/s"))
    add("accuracy", lambda s: fig_pct(s.figures.get("quality"), s.quality_overall, nm))
    add("format", lambda s: fig_pct(s.figures.get("format_compliance"), s.format_compliance, nm))
    add("strict_format", lambda s: fig_pct(s.figures.get("strict_format"), None, nm))
    add("unacceptable", lambda s: fig_pct(s.figures.get("unacceptable_rate"), s.unacceptable_rate,
                                           nm))
    add("output_p50_p95", lambda s: _lengths(s, nm))
    add("decay", lambda s: pct(s.decay, nm))
    # energy and heat: a figure nobody could measure says so, never 0
    add("avg_power", lambda s: nm if s.power_w is None else f"{s.power_w:.2f} W" + (
        "" if s.idle_power_w is None else f" (idle {s.idle_power_w:.2f} W)"))
    add("energy_token", lambda s: nm if s.energy_per_token_j is None else
        f"{s.energy_per_token_j:.4f} J" + ("" if s.prefill_energy_per_token_j is None else
                                           f" ({s.prefill_energy_per_token_j:.5f} J)"))
    add("throttle_onset", lambda s: f"{s.throttled_after_s:.0f} s" if s.throttled_after_s
        is not None else tr("throttle_none", lang) if any(
            p.get("temperature_c") is not None or p.get("cpu_freq_share") is not None
            for p in s.sustained_timeline) else nm)
    add("memory_growth", lambda s: nm if s.memory_growth_mib_per_1k is None else
        f"{s.memory_growth_mib_per_1k:.2f} MiB / 1000 tok")
    add("power_source", lambda s: s.power_source or nm)
    add("kld", lambda s: nm if s.kld_mean is None else f"{s.kld_mean:.4f} / {s.kld_p99:.4f}"
        if s.kld_p99 is not None else f"{s.kld_mean:.4f}")
    add("ppl_ratio", lambda s: _f(s.ppl_ratio, nm, "{:.3f}"))
    add("difficulty", lambda s: tr(texts.of(s.candidate).difficulty or "not_measured", lang))
    return header, [[label] + vals for label, vals in rows]


def _lengths(s: CandidateSummary, nm: str) -> str:
    """'24 / 61' tokens: what the candidate's answers ran to over the eval (seed 003 §6.3)."""
    p50, p95 = s.figures.get("output_tokens_p50"), s.figures.get("output_tokens_p95")
    if p50 is None or p95 is None:
        return nm
    return f"{p50.value:.0f} / {p95.value:.0f}"


def _texts(decision: Decision) -> DecisionTexts:
    if decision.texts is None:
        raise ValueError("the decision carries no texts (decide/wording.py writes them)")
    return decision.texts


def ranking_table(decision: Decision, lang: str) -> tuple[list[str], list[list[str]]]:
    header = [tr(k, lang) for k in ("rank", "candidate", "score", "status", "pareto", "reasons")]
    texts, rows = _texts(decision), []
    for i, r in enumerate(decision.ranking, 1):
        reasons = texts.of(r.candidate).reasons
        rows.append([str(i), r.candidate, "-" if r.score is None else f"{r.score:.3f}",
                     tr(r.status, lang), "✓" if r.pareto else "",
                     "; ".join(reasons.get(lang) or reasons.get("en", []))])
    return header, rows


def gates_table(decision: Decision, lang: str) -> tuple[list[str], list[list[str]]]:
    """Every hard constraint of every candidate: value [95% interval], limit, verdict."""
    header = [tr(k, lang) for k in ("candidate", "gate", "value_ci", "limit", "verdict",
                                    "to_settle")]
    texts, rows = _texts(decision), []
    for r in decision.ranking:
        for g, line in zip(r.gates, texts.of(r.candidate).gates, strict=True):
            rows.append([r.candidate, line.label.get(lang) or line.label["en"], line.shown,
                         ("≤ " if g.direction == "max" else "≥ ") + line.limit_shown,
                         tr(g.verdict, lang),
                         "" if g.items_to_settle is None else str(g.items_to_settle)])
    return header, rows


def routes_table(decision: Decision, lang: str) -> tuple[list[str], list[list[str]]]:
    """The hybrid plan's route per task type (empty when the decision is not hybrid): share,
    expected badcases, the latency on its path, and the cloud's cost when priced."""
    header = [tr(k, lang) for k in ("task", "route", "share", "badcases_per_1000",
                                    "path_latency")]
    h = decision.hybrid
    if h is None:
        return header, []
    rows = [[r.task, r.route, whole_pct(r.share or 0),
             "-" if r.badcases_per_1000 is None else f"{r.badcases_per_1000:.0f}"
             + (f" [{r.low:.0f}, {r.high:.0f}]" if r.low is not None else ""),
             "-" if r.latency_ms is None else f"{r.latency_ms:.0f}"]
            for r in h.routes]
    rows.append([tr("overall", lang), f"cloud {whole_pct(h.cloud_share)}", "100%",
                 f"{h.badcases_per_1000:.0f}" + (f" [{h.low:.0f}, {h.high:.0f}]"
                                                  if h.low is not None else ""),
                 "" if h.cost_per_1000 is None
                 else f"{tr('cloud_cost', lang)}: {h.cost_per_1000:.2f}"])
    return header, rows


def team_table(decision: Decision, lang: str) -> tuple[list[str], list[list[str]]]:
    """The team's model per task type (empty when the decision is no team): share, expected
    badcases, the model's residency, memory need and load time; then the team overall: its
    memory plan against the limit and the expected swaps per 1000 requests."""
    header = [tr(k, lang) for k in ("task", "team_model", "share", "badcases_per_1000",
                                    "residency", "memory_need", "load_time")]
    p = decision.team
    if p is None:
        return header, []
    by = {m.candidate: m for m in p.members}
    res = {True: tr("pinned", lang), False: tr("on_demand", lang)}

    def bad(v: float, lo: float | None, hi: float | None) -> str:
        return f"{v:.0f}" + (f" [{lo:.0f}, {hi:.0f}]" if lo is not None and hi is not None else "")

    rows = [[r.task, r.route, whole_pct(r.share or 0),
             "-" if r.badcases_per_1000 is None else bad(r.badcases_per_1000, r.low, r.high),
             res[by[r.route].pin], mib(by[r.route].need_bytes),
             _f(by[r.route].load_ms, "-", "{:.0f}")] for r in p.routes]
    ms = "-" if p.swap_ms_per_request is None else f"{p.swap_ms_per_request:.0f} ms"
    rows.append([tr("overall", lang), str(len(p.members)), "100%",
                 bad(p.badcases_per_1000, p.low, p.high),
                 f"{p.swaps_per_1000:.0f} / 1000 ({ms})",
                 f"{mib(p.memory_bytes)} ≤ {mib(p.budget_bytes)}", ""])
    return header, rows


def predicted_table(summaries: list[CandidateSummary], texts: DecisionTexts,
                    lang: str) -> tuple[list[str], list[list[str]]]:
    nm = tr("not_measured", lang)
    # fit's need total against the measured need, like with like (docs/metrics.md); a bench
    # stored before the need was measured compares VmHWM, marked so
    header = [tr("candidate", lang), f"{tr('mem_need', lang)} ({tr('predicted', lang)})",
              f"{tr('mem_need', lang)} ({tr('measured', lang)})", tr("ratio", lang),
              f"{tr('decode', lang)} ({tr('predicted', lang)})",
              f"{tr('decode', lang)} ({tr('measured', lang)})", tr("ratio", lang),
              tr("vmhwm_ref", lang)]
    rows = []
    for s in summaries:
        need = texts.of(s.candidate).memory_need
        mr = f"{need / s.predicted_peak_bytes:.2f}" if need and s.predicted_peak_bytes else "-"
        shown = mib(need, nm) + (" (VmHWM)" if need and s.peak_need_bytes is None else "")
        dr = (f"{s.decode_tps / s.predicted_decode_tps:.2f}"
              if s.decode_tps and s.predicted_decode_tps else "-")
        pred = _f(s.predicted_decode_tps, nm, "{:.1f}", "tok/s")
        if s.predicted_decode_tps and s.predicted_decode_band:  # fit's validated error band
            lo, hi = (s.predicted_decode_tps * r for r in s.predicted_decode_band)
            pred += f" ({lo:.0f}-{hi:.0f})"
        rows.append([s.candidate, mib(s.predicted_peak_bytes, nm), shown, mr, pred,
                     _f(s.decode_tps, nm, "{:.1f}", "tok/s"), dr, mib(s.peak_rss_bytes, nm)])
    return header, rows


def task_table(summaries: list[CandidateSummary], texts: DecisionTexts,
               lang: str) -> tuple[list[str], list[list[str]]]:
    nm = tr("not_measured", lang)
    header = [tr(k, lang) for k in ("candidate", "task", "n", "accuracy", "ref_score", "gap",
                                    "badcases_per_1000", "ref_badcases", "badcases_1000",
                                    "unacceptable", "format")]
    rows = []
    for s in summaries:
        for task, q in sorted(s.tasks.items()):
            ci = f" [{q.ci95[0] * 100:.1f}, {q.ci95[1] * 100:.1f}]" if q.ci95 else ""
            score = pct_ci(q.score, *(q.score_ci95 or (None, None)), missing=nm)
            extra = _f(q.badcases_per_1000, nm, "{:+.0f}")
            if q.badcases_per_1000_ci95 and q.badcases_per_1000 is not None:
                lo, hi = q.badcases_per_1000_ci95
                extra += f" [{lo:+.0f}, {hi:+.0f}]"
            rows.append([s.candidate, task, str(q.n or ""), score, pct(q.ref_score, nm),
                         nm if q.gap_abs is None else f"{q.gap_abs * 100:.1f}{ci}",
                         _per_1000(q.badcases, nm), _per_1000(q.ref_badcases, nm), extra,
                         fig_pct(q.unacceptable, q.unacceptable_rate, nm),
                         fig_pct(q.format_ok, q.format_ok_rate, nm)])
    return header, rows


def badcase_table(summaries: list[CandidateSummary], texts: DecisionTexts, lang: str,
                  limit: int = 20) -> tuple[list[str], list[list[str]]]:
    header = [tr(k, lang) for k in ("candidate", "item", "task", "expected", "got", "why_failed")]
    rows = []
    for s in summaries:
        for b in s.badcases[:limit]:
            exp = b.get("expected")
            rows.append([s.candidate, str(b.get("item_id", "")), str(b.get("task", "")),
                         _short(exp if isinstance(exp, str) else repr(exp)),
                         _short(str(b.get("got", ""))), str(b.get("why", ""))])
    return header, rows


def _short(text: str, n: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
