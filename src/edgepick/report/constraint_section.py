"""The report's constrained-output table (seed 000 §2.3: a structured answer
breaks on one wrong token): for each model measured with `constrain: grammar`, its candidates
free and constrained side by side, with format errors and unacceptable answers (each with its
95% interval) and the grammar's cost in speed: decode tokens/s under the grammar against the
same prompts decoded free to the same length on the same load (evaluate/outputs.TIMED_ITEMS).
The figures are the summaries' own."""

from __future__ import annotations

from html import escape
from pathlib import Path

from edgepick.markup import html_table, md_table
from edgepick.records.decision import CandidateSummary, Figure
from edgepick.report.append import append_section
from edgepick.strings import texts
from edgepick.units import pct, pct_ci


def constraint_groups(summaries: list[CandidateSummary]) -> dict[str, list[CandidateSummary]]:
    """Model file -> its candidates, for models with a candidate run under a grammar."""
    groups: dict[str, list[CandidateSummary]] = {}
    for s in summaries:
        groups.setdefault(s.model, []).append(s)
    return {m: g for m, g in groups.items()
            if any((s.settings or {}).get("constrain") == "grammar" for s in g)}


def _errors(f: Figure | None, na: str) -> str:
    """Format compliance as the share of format errors, its interval turned round."""
    if f is None:
        return na
    return pct_ci(1 - f.value, None if f.high is None else 1 - f.high,
                  None if f.low is None else 1 - f.low)


def _speed(s: CandidateSummary, t: dict, na: str) -> str:
    g, free = s.figures.get("grammar_decode_tps"), s.figures.get("free_decode_tps")
    if g is None or free is None:
        return na
    return t["speed_cell"].format(g=g.value, f=free.value, n=g.n or 0,
                                  cost=pct(1 - g.value / free.value))


def _row(s: CandidateSummary, t: dict) -> list[str]:
    na = t["not_measured"]
    un = s.figures.get("unacceptable_rate")
    grammar = (s.settings or {}).get("constrain") == "grammar"
    return [(s.settings or {}).get("variant") or s.candidate,
            t["grammar"] if grammar else t["free"], _errors(s.figures.get("format_compliance"), na),
            na if un is None else pct_ci(un.value, un.low, un.high),
            _speed(s, t, na) if grammar else "-"]


def table(group: list[CandidateSummary], lang: str):
    t = texts("constraint_report", lang)
    head = [t["configuration"], t["decoding"], t["format_errors"], t["unacceptable"], t["speed"]]
    return head, [_row(s, t) for s in group]


def render_markdown(groups: dict, lang: str) -> str:
    t = texts("constraint_report", lang)
    out = []
    for model, group in groups.items():
        out += [f"## {t['title'].format(model=Path(model).name)}", "", t["lead"], "",
                md_table(*table(group, lang)), ""]
    return "\n".join(out)


def render_html(groups: dict, lang: str) -> str:
    t = texts("constraint_report", lang)
    return "".join(f"<h2>{escape(t['title'].format(model=Path(model).name))}</h2>"
                   f"<p>{escape(t['lead'])}</p>" + html_table(*table(group, lang))
                   for model, group in groups.items())


def append_to_report(out: str | Path, summaries: list[CandidateSummary],
                     langs: list[str]) -> list[Path]:
    """The section in the report's files when a model ran under a grammar; [] otherwise."""
    groups = constraint_groups(summaries)
    if not groups:
        return []
    return append_section(out, langs, lambda lg: render_markdown(groups, lg),
                          lambda lg: render_html(groups, lg))
