"""The report's runtime-settings table (seed 004 §5.4's table of configurations
with first-token time, per-token latency and peak memory, here with fidelity too): for each model
a plan measured under several runtime settings (plan/runtime_axes.py), one row per configuration
with its figures and what the decision made of it. The figures are the summaries' own."""

from __future__ import annotations

from html import escape
from pathlib import Path

from edgepick.markup import html_table, md_table
from edgepick.records.decision import CandidateSummary, Decision
from edgepick.report.append import append_section
from edgepick.strings import texts
from edgepick.units import mib, pct


def settings_groups(summaries: list[CandidateSummary]) -> dict[str, list[CandidateSummary]]:
    """Model file -> its candidates that differ only in runtime settings, for models with two
    or more of them."""
    groups: dict[str, list[CandidateSummary]] = {}
    for s in summaries:
        if (s.settings or {}).get("variant"):
            groups.setdefault(s.model, []).append(s)
    return {m: g for m, g in groups.items() if len(g) > 1}


def _ms(x: float | None, missing: str) -> str:
    return missing if x is None else f"{x:.0f} ms" if x >= 10 else f"{x:.1f} ms"


def _fidelity(s: CandidateSummary, na: str) -> str:
    """KLD / top-1 / first divergence at each context it was measured at (the scenario's P95
    and P99), else the one comparison the summary holds."""
    def at(name: str, ctx: int):
        f = s.figures.get(f"{name}@ctx{ctx}")
        return None if f is None else f.value

    ctxs = sorted(int(k.rpartition("@ctx")[2]) for k in s.figures if k.startswith("kld_mean@ctx"))
    if not ctxs:
        return na if s.kld_mean is None else \
            f"{s.kld_mean:.2g} / {pct(s.same_top1) if s.same_top1 is not None else '-'}"
    return "; ".join(f"{c}: {at('kld_mean', c):.2g} / {pct(at('same_top1', c))} / "
                     f"{pct(at('first_divergence_share', c))}" for c in ctxs)


def _row(s: CandidateSummary, d: Decision, t: dict) -> list[str]:
    na = t["not_measured"]
    tps = s.decode_tps
    itl = None if not tps else 1000.0 / tps
    memory = s.peak_need_bytes or s.peak_rss_bytes
    fid = _fidelity(s, na)
    ranked = next((r for r in d.ranking if r.candidate == s.candidate), None)
    if s.candidate == d.recommendation:
        verdict = t["chosen"]
    elif ranked is not None and ranked.eliminated:
        verdict = "; ".join(ranked.reasons[:1]) or "-"
    else:
        verdict = t["passes"]
    if s.skipped:
        verdict = s.skipped
    return [s.settings["variant"], _ms(s.ttft_p50_ms, na),
            f"{_ms(itl, na)} / {_ms(s.itl_p99_ms, '-')}", mib(memory, na), fid, verdict]


def table(group: list[CandidateSummary], d: Decision, lang: str):
    t = texts("settings_report", lang)
    head = [t["configuration"], t["ttft"], t["itl"], t["memory"], t["fidelity"], t["verdict"]]
    return head, [_row(s, d, t) for s in group]


def render_markdown(groups: dict, d: Decision, lang: str) -> str:
    t = texts("settings_report", lang)
    out = []
    for model, group in groups.items():
        out += [f"## {t['title'].format(model=Path(model).name)}", "", t["lead"], "",
                md_table(*table(group, d, lang)), ""]
    return "\n".join(out)


def render_html(groups: dict, d: Decision, lang: str) -> str:
    t = texts("settings_report", lang)
    return "".join(f"<h2>{escape(t['title'].format(model=Path(model).name))}</h2>"
                   f"<p>{escape(t['lead'])}</p>" + html_table(*table(group, d, lang))
                   for model, group in groups.items())


def append_to_report(out: str | Path, summaries: list[CandidateSummary], d: Decision,
                     langs: list[str]) -> list[Path]:
    """The section in the report's files when a model has several settings; [] otherwise."""
    groups = settings_groups(summaries)
    if not groups:
        return []
    return append_section(out, langs, lambda lg: render_markdown(groups, d, lg),
                          lambda lg: render_html(groups, d, lg))
