"""The Markdown report. Charts are referenced as SVG files in `charts/` next to it."""

from __future__ import annotations

from edgepick.markup import md_table
from edgepick.records.decision import Decision
from edgepick.records.decision_texts import ScenarioFacts
from edgepick.report.engines import engine_section
from edgepick.report.i18n import tr
from edgepick.report.model import ReportModel
from edgepick.report.tool_section import tool_table
from edgepick.units import mib, whole_pct


def decision_lines(d: Decision, ex, lang: str, rec: str | None = None) -> list[str]:
    out = [f"**{tr('recommendation', lang)}:** {rec or d.recommendation or tr('none', lang)}", ""]
    for key, lines in (("why", ex.why), ("cost", ex.cost), ("watch", ex.watch)):
        if lines:
            out.append(f"**{tr(key, lang)}**")
            out += [f"- {x}" for x in lines]
            out.append("")
    return out


def scenario_lines(sc: ScenarioFacts, lang: str) -> list[str]:
    return [f"- {tr('constraints', lang)}: " + ", ".join(f"`{k} = {v}`"
                                                        for k, v in sc.constraints.items()),
            f"- {tr('weights', lang)}: " + ", ".join(f"{tr(k, lang)} {whole_pct(v)}"
                                                    for k, v in sc.weights.items())]


def render_markdown(m: ReportModel, lang: str) -> str:
    d = m.decision
    out = [f"# {tr('title', lang)}", "",
           f"- {tr('scenario', lang)}: **{m.scenario.name}** — {m.scenario_description(lang)}",
           f"- {tr('device', lang)}: {m.device or '-'}"
           + (f" ({tr('budget', lang)} {mib(d.budget_bytes)})" if d.budget_bytes else ""),
           f"- {tr('generated', lang)}: {m.generated}", *scenario_lines(m.scenario, lang), "",
           f"## {tr('decision', lang)}", "",
           *decision_lines(d, m.explanation(lang), lang, m.recommendation(lang)),
           *([f"### {tr('routes', lang)}", "", md_table(*m.table('routes', lang)), ""]
             if d.hybrid else []),
           *([f"### {tr('team_routes', lang)}", "", md_table(*m.table('team', lang)), ""]
             if d.team else []),
           f"## {tr('ranking', lang)}", "", md_table(*m.table('ranking', lang)), "",
           f"### {tr('gates', lang)}", "", md_table(*m.table('gates', lang)), "",
           f"*{tr('normalisation', lang)}: {tr('normalisation_text', lang) or d.normalisation}*", "",
           f"## {tr('template', lang)}", "", md_table(*m.table('template', lang)), "",
           f"## {tr('pred_vs_meas', lang)}", "", md_table(*m.table('predicted', lang)), "",
           f"## {tr('charts', lang)}", ""]
    for name, title in m.chart_titles(lang):
        out.append(f"### {title}")
        out.append("")
        out.append(f"![{title}](charts/{name}.svg)" if m.charts[name]["svg"]
                   else f"*{tr('no_data', lang)}*")
        out.append("")

    if (eng := engine_section(m.summaries, d, lang)):  # one model on two engines
        out += [f"## {eng[0]}", "", eng[3], "", md_table(eng[1], eng[2]), ""]
    out += [f"## {tr('per_task', lang)}", "", md_table(*m.table('tasks', lang)), ""]
    tools = tool_table(m.summaries, lang)
    if tools:
        out += [f"### {tools[0]}", "", md_table(tools[1], tools[2]), "", f"*{tools[3]}*", ""]
    out += [f"## {tr('badcases', lang)}", "", md_table(*m.table('badcases', lang)), "",
            tr("exports", lang), ""]
    return "\n".join(out)
