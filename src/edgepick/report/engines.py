"""The engine comparison of a report: the same model on two engines, side by side (seed 003
§4.1-4.3; seed 004 §3.3: never pick a framework on benchmark scores alone, so the conversion's
cost and pitfalls sit next to the speed and quality figures)."""

from __future__ import annotations

from edgepick.convert.facts import conversion_record, pitfalls_of
from edgepick.records.decision import CandidateSummary, Decision
from edgepick.report.tables import fig_pct
from edgepick.units import mib

_T = {
    "title": ("Engine comparison", "推理引擎对比"),
    "candidate": ("candidate", "候选"), "engine": ("engine", "引擎"), "quant": ("weights", "权重"),
    "decode": ("decode tok/s", "解码 tok/s"), "prefill": ("prefill tok/s", "预填充 tok/s"),
    "peak": ("peak memory", "峰值内存"), "kld": ("KLD vs F16", "对 F16 的 KLD"),
    "quality": ("eval score", "评测得分"), "unacceptable": ("unacceptable", "不可接受率"),
    "format": ("format compliance", "格式合规"), "conversion": ("conversion", "转换"),
    "pitfalls": ("known pitfalls", "已知陷阱"),
    "none": ("none (runs the GGUF as is)", "无（直接运行 GGUF）"),
    "chosen": ("Engine of the recommendation: **{e}** ({c}).", "推荐方案所用引擎：**{e}**（{c}）。"),
    "nm": ("not measured", "未测"),
}


def _t(key: str, lang: str) -> str:
    en, zh = _T[key]
    return zh if lang == "zh" else en


def engine_table(summaries: list[CandidateSummary],
                 lang: str) -> tuple[list[str], list[list[str]]] | None:
    """One row per candidate when the candidates run on more than one engine, else None."""
    if len({s.backend for s in summaries}) < 2:
        return None
    nm = _t("nm", lang)
    header = [_t(k, lang) for k in ("candidate", "engine", "quant", "decode", "prefill", "peak",
                                    "kld", "quality", "unacceptable", "format", "conversion",
                                    "pitfalls")]
    rows = []
    for s in summaries:
        rec = conversion_record(s.model) if not s.model.endswith(".gguf") else None
        conv = (f"{rec.seconds:.0f} s, {len(rec.steps)} steps" if rec else _t("none", lang))
        pits = "; ".join(pitfalls_of(rec)) if rec else "-"
        rows.append([
            s.candidate, s.backend, s.quant or nm,
            nm if s.decode_tps is None else f"{s.decode_tps:.1f}",
            nm if s.prefill_tps is None else f"{s.prefill_tps:.0f}",
            mib(s.peak_rss_bytes, nm),
            nm if s.kld_mean is None else f"{s.kld_mean:.4f}",
            fig_pct(s.figures.get("quality"), s.quality_overall, nm),
            fig_pct(s.figures.get("unacceptable_rate"), s.unacceptable_rate, nm),
            fig_pct(s.figures.get("format_compliance"), s.format_compliance, nm),
            conv, pits])
    return header, rows


def engine_section(summaries: list[CandidateSummary], decision: Decision,
                   lang: str) -> tuple[str, list[str], list[list[str]], str] | None:
    """(title, header, rows, the sentence naming the recommended engine) or None."""
    table = engine_table(summaries, lang)
    if table is None:
        return None
    by_name = {s.candidate: s for s in summaries}
    rec = by_name.get(decision.recommendation or "")
    chosen = _t("chosen", lang).format(e=rec.backend, c=rec.candidate) if rec else ""
    return _t("title", lang), table[0], table[1], chosen
