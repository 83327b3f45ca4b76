"""The report's doctor section: the causes `edgepick doctor` found for the deployed
model, ranked, each with its evidence and fix, in English or Chinese. Read from the results
store (kind "doctor") when a run's report is written, or added to the report beside a
deploy.yaml when doctor runs against it; a newer section replaces the older one."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from edgepick.doctor.finding import DoctorReport
from edgepick.doctor.render import checks_table, evidence_lines, findings_table
from edgepick.doctor.runner import KIND
from edgepick.markup import html_table, md_table
from edgepick.report.append import append_section
from edgepick.strings import texts

_BEGIN, _END = "<!-- edgepick-doctor -->", "<!-- /edgepick-doctor -->"
_OLD = re.compile(re.escape(_BEGIN) + ".*?" + re.escape(_END), re.S)


def latest_doctor(store, models: list[str | None]) -> DoctorReport | None:
    """The newest stored doctor report of any of `models` (file paths)."""
    wanted = {m for m in models if m}
    last = None
    for _, payload in store.items(KIND):
        if payload.get("model") in wanted:
            last = payload
    return None if last is None else DoctorReport.model_validate(last)


def render_markdown(rep: DoctorReport, lang: str) -> str:
    t = texts("doctor", lang)
    out = [_BEGIN, f"## {t['section']}", "", t["section_lead"], ""]
    if rep.findings:
        out += [md_table(*findings_table(rep, lang)), ""]
        for i, f in enumerate(rep.findings, 1):
            out += [f"**#{i} {t.get(f.cause, f.cause)}** — {t['evidence']}:", ""]
            out += [f"- {line}" for line in evidence_lines(f, lang)] + [""]
    else:
        out += [t["none"], ""]
    out += [md_table(*checks_table(rep, lang)), "", _END]
    return "\n".join(out)


def render_html(rep: DoctorReport, lang: str) -> str:
    t = texts("doctor", lang)
    parts = [_BEGIN, f"<h2>{escape(t['section'])}</h2><p>{escape(t['section_lead'])}</p>"]
    if rep.findings:
        parts.append(html_table(*findings_table(rep, lang)))
        for i, f in enumerate(rep.findings, 1):
            parts.append(f"<p><b>#{i} {escape(t.get(f.cause, f.cause))}</b> — "
                         f"{escape(t['evidence'])}:</p><ul>"
                         + "".join(f"<li>{escape(x)}</li>" for x in evidence_lines(f, lang))
                         + "</ul>")
    else:
        parts.append(f"<p>{escape(t['none'])}</p>")
    parts += [html_table(*checks_table(rep, lang)), _END]
    return "".join(parts)


def append_to_report(out: str | Path, rep: DoctorReport, langs: list[str]) -> list[Path]:
    """The section in the report's files, replacing an earlier doctor section."""
    out = Path(out)
    for lg in langs:
        for page in (out / f"report.{lg}.md", out / f"report.{lg}.html"):
            if page.exists():
                text = page.read_text(encoding="utf-8")
                if _BEGIN in text:
                    page.write_text(_OLD.sub("", text), encoding="utf-8")
    return append_section(out, langs, lambda lg: render_markdown(rep, lg),
                          lambda lg: render_html(rep, lg))


def report_dir_of(deploy: str | Path) -> Path | None:
    """The report `edgepick run` wrote beside a deploy.yaml (<output>/report), if any."""
    here = Path(deploy).resolve().parent
    for d in (here / "report", here, here.parent / "report"):
        if any((d / f"report.{lg}.html").exists() for lg in ("en", "zh")):
            return d
    return None
