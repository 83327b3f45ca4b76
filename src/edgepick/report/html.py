"""One self-contained HTML file: inline CSS, charts as inline SVG, no scripts, fonts or links
to anything outside the file, so it opens offline."""

from __future__ import annotations

from html import escape

from edgepick.markup import html_table
from edgepick.report.engines import engine_section
from edgepick.report.i18n import tr
from edgepick.report.markdown import scenario_lines
from edgepick.report.model import ReportModel
from edgepick.report.tool_section import tool_table
from edgepick.units import mib

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI","PingFang SC","Microsoft YaHei",sans-serif;
margin:2rem auto;max-width:1100px;padding:0 1rem;color:#222;line-height:1.45}
h1{border-bottom:2px solid #333}h2{margin-top:2rem;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5rem 0;font-size:.88rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f2f2f2}tr.elim td{color:#999}tr.win td{background:#eefbea;font-weight:600}
.rec{font-size:1.2rem;padding:.6rem 1rem;background:#eefbea;border-left:5px solid #2ca02c}
.rec.none{background:#fdecea;border-left-color:#d62728}.chart svg{max-width:100%;height:auto}.muted{color:#777;font-style:italic}
code{background:#f5f5f5;padding:0 .2rem}
"""


def _list(lines: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{escape(x)}</li>" for x in lines) + "</ul>"


def render_html(m: ReportModel, lang: str) -> str:
    d = m.decision
    parts = [f"<h1>{escape(tr('title', lang))}</h1>",
             f"<p>{escape(tr('scenario', lang))}: <b>{escape(m.scenario.name)}</b> — "
             f"{escape(m.scenario_description(lang))}<br>{escape(tr('device', lang))}: "
             f"{escape(m.device or '-')}"
             + (f" ({escape(tr('budget', lang))} {mib(d.budget_bytes)})"
                if d.budget_bytes else "")
             + f"<br>{escape(tr('generated', lang))}: {escape(m.generated)}</p>",
             _list([line.lstrip("- ").replace("`", "") for line in scenario_lines(m.scenario, lang)]),
             f"<h2>{escape(tr('decision', lang))}</h2>",
             f"<div class='rec{'' if d.recommendation else ' none'}'>"
             f"{escape(tr('recommendation', lang))}: "
             f"<b>{escape(m.recommendation(lang))}</b></div>"]
    ex = m.explanation(lang)
    for key, lines in (("why", ex.why), ("cost", ex.cost), ("watch", ex.watch)):
        if lines:
            parts.append(f"<h3>{escape(tr(key, lang))}</h3>{_list(lines)}")
    if d.hybrid:
        parts.append(f"<h3>{escape(tr('routes', lang))}</h3>{html_table(*m.table('routes', lang))}")
    if d.team:
        parts.append(f"<h3>{escape(tr('team_routes', lang))}</h3>"
                     f"{html_table(*m.table('team', lang))}")
    header, rows = m.table('ranking', lang)
    classes = ["elim" if r.eliminated else ("win" if r.candidate == d.recommendation else "")
               for r in d.ranking]
    parts += [f"<h2>{escape(tr('ranking', lang))}</h2>", html_table(header, rows, classes),
              f"<h3>{escape(tr('gates', lang))}</h3>", html_table(*m.table('gates', lang)),
              f"<p class='muted'>{escape(tr('normalisation', lang))}: "
              f"{escape(tr('normalisation_text', lang) or d.normalisation)}</p>",
              f"<h2>{escape(tr('template', lang))}</h2>", html_table(*m.table('template', lang)),
              f"<h2>{escape(tr('pred_vs_meas', lang))}</h2>", html_table(*m.table('predicted', lang)),
              f"<h2>{escape(tr('charts', lang))}</h2>"]
    for name, title in m.chart_titles(lang):
        svg = m.charts[name]["svg"]
        body = f"<div class='chart' id='chart-{name}'>{svg}</div>" if svg \
            else f"<p class='muted'>{escape(tr('no_data', lang))}</p>"
        parts.append(f"<h3>{escape(title)}</h3>{body}")

    if (eng := engine_section(m.summaries, d, lang)):  # one model on two engines
        parts += [f"<h2>{escape(eng[0])}</h2>",
                  f"<p>{escape(eng[3]).replace('**', '')}</p>", html_table(eng[1], eng[2])]
    parts += [f"<h2>{escape(tr('per_task', lang))}</h2>", html_table(*m.table('tasks', lang))]
    tools = tool_table(m.summaries, lang)
    if tools:
        parts += [f"<h3>{escape(tools[0])}</h3>", html_table(tools[1], tools[2]),
                  f"<p class='muted'>{escape(tools[3])}</p>"]
    parts += [f"<h2>{escape(tr('badcases', lang))}</h2>", html_table(*m.table('badcases', lang)),
              f"<p class='muted'>{escape(tr('exports', lang))}</p>"]
    html_lang = "zh-CN" if lang == "zh" else "en"
    return (f"<!DOCTYPE html>\n<html lang='{html_lang}'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(tr('title', lang))} — {escape(m.scenario.name)}</title>"
            f"<style>{CSS}</style></head><body>{''.join(parts)}</body></html>\n")
