"""The report's speculative-decoding section: per task, every kind measured against plain
decoding (speed-up and acceptance with their intervals, mean accepted length, the draft's share
of decode time, unchanged greedy answers), which one the decision chose and where speculation
loses, and how deploy.yaml carries the choice. Rendered from the stored decision's
`speculation` (decide/speculation.py decided it)."""

from __future__ import annotations

from html import escape
from pathlib import Path

from edgepick.markup import html_table, md_table
from edgepick.records.speculative import SpecFigures, SpeculationChoice, TaskSpeculation
from edgepick.report.append import append_section
from edgepick.strings import texts
from edgepick.units import pct


def _iv(x: float | None, lo: float | None, hi: float | None, fmt: str = "{:.2f}") -> str:
    if x is None:
        return "-"
    return fmt.format(x) if lo is None or hi is None else \
        f"{fmt.format(x)} [{fmt.format(lo)}, {fmt.format(hi)}]"


def _verdict(t: TaskSpeculation, f: SpecFigures, words: dict) -> str:
    k = f.drafting_items
    on = "" if k is None or k in (0, f.items) else \
        " (" + words["drafted_on"].format(k=k, n=f.items) + ")"
    if t.chosen is not None and t.chosen.tag() == f.setting:
        return f"{words['chosen']} ({words['wins']})" + on
    return (words["changed"] if f.identical < f.items else words.get(f.verdict, f.verdict)) + on


def table(choice: SpeculationChoice, lang: str) -> tuple[list[str], list[list[str]]]:
    t = texts("speculation_report", lang)
    head = [t["task"], t["kind"], t["speedup"], t["acceptance"], t["mean_len"], t["draft_share"],
            t["identical"], t["verdict"]]
    rows = []
    for task in choice.tasks:
        if not task.figures:
            rows.append([task.task, "-", "-", "-", "-", "-", "-", t["unmeasured"]])
        for f in task.figures:
            rows.append([
                task.task, f.setting, _iv(f.speedup, f.speedup_low, f.speedup_high),
                _iv(f.acceptance, f.acceptance_low, f.acceptance_high),
                "-" if f.mean_accepted_len is None else f"{f.mean_accepted_len:.1f}",
                "-" if f.draft_share is None else pct(f.draft_share),
                f"{f.identical}/{f.items}", _verdict(task, f, t)])
    return head, rows


def lines(choice: SpeculationChoice, lang: str) -> list[str]:
    """What deploy.yaml does with the choice, then the measurement's provenance."""
    t = texts("speculation_report", lang)
    won = [x for x in choice.tasks if x.chosen is not None]
    kinds = ", ".join(dict.fromkeys(x.chosen.tag() for x in won))
    applied = t[f"applied_{choice.applied.replace('-', '_')}"].format(
        kinds=kinds, tasks=", ".join(x.task for x in won))
    out = [applied + (f" ({choice.note})" if choice.note else "")]
    if choice.timing_gap is not None:
        out.append(t["timing_gap"].format(gap=pct(choice.timing_gap)))
    base = ", ".join(f"{k} {v}" for k, v in choice.base.items()
                     if k in ("threads", "n_ctx", "kv_type", "flash_attn"))
    out.append(t["measured"].format(base=base or "-"))
    return out


def render_markdown(choice: SpeculationChoice, lang: str) -> str:
    t = texts("speculation_report", lang)
    return "\n".join([f"## {t['title'].format(model=choice.candidate)}", "", t["lead"], "",
                      md_table(*table(choice, lang)), "", *[x + "\n" for x in lines(choice, lang)]])


def render_html(choice: SpeculationChoice, lang: str) -> str:
    t = texts("speculation_report", lang)
    return (f"<h2>{escape(t['title'].format(model=choice.candidate))}</h2>"
            f"<p>{escape(t['lead'])}</p>" + html_table(*table(choice, lang))
            + "".join(f"<p>{escape(x)}</p>" for x in lines(choice, lang)))


def append_to_report(out: str | Path, choice: SpeculationChoice, langs: list[str]) -> list[Path]:
    return append_section(out, langs, lambda lg: render_markdown(choice, lg),
                          lambda lg: render_html(choice, lg))
