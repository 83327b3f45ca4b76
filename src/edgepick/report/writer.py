"""Write the report: Markdown + HTML per language, SVG charts, CSV/JSON of every figure."""

from __future__ import annotations

import json
from pathlib import Path

from edgepick.errors import EdgepickError
from edgepick.records.decision import CandidateSummary, Decision
from edgepick.report.export import write_rows, write_table
from edgepick.report.html import render_html
from edgepick.report.markdown import render_markdown
from edgepick.report.model import ReportModel

LANGS = {"en": ["en"], "zh": ["zh"], "both": ["en", "zh"]}


def write_report(summaries: list[CandidateSummary], decision: Decision, out: str | Path,
                 lang: str = "both", device: str | None = None) -> list[Path]:
    """Paths of the report files written (HTML first), plus the data files beside them. The
    decision carries its own words (decision.texts, written by the decide stage)."""
    if lang not in LANGS:
        raise EdgepickError(f"--lang must be en, zh or both, got '{lang}'")
    out = Path(out)
    (out / "charts").mkdir(parents=True, exist_ok=True)
    m = ReportModel(summaries, decision, device)
    data = out / "data"
    for name, chart in m.charts.items():
        write_rows(data / name, chart["data"])
        if chart["svg"]:
            (out / "charts" / f"{name}.svg").write_text(chart["svg"], encoding="utf-8")
    write_table(data / "record_template", *m.table("template", "en"))
    write_table(data / "predicted_vs_measured_table", *m.table("predicted", "en"))
    write_table(data / "task_quality_table", *m.table("tasks", "en"))
    write_table(data / "badcases", *m.table("badcases", "en"))
    write_table(data / "gates", *m.table("gates", "en"))
    if decision.hybrid:
        write_table(data / "hybrid_routes", *m.table("routes", "en"))
    if decision.team:
        write_table(data / "team_routes", *m.table("team", "en"))
    (data / "decision.json").write_text(decision.model_dump_json(indent=2), encoding="utf-8")
    (data / "summaries.json").write_text(
        json.dumps([s.model_dump(mode="json") for s in summaries], indent=2, ensure_ascii=False),
        encoding="utf-8")
    written = []
    for lg in LANGS[lang]:
        h = out / f"report.{lg}.html"
        h.write_text(render_html(m, lg), encoding="utf-8")
        md = out / f"report.{lg}.md"
        md.write_text(render_markdown(m, lg), encoding="utf-8")
        written += [h, md]
    return written
