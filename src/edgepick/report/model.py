"""Everything a report shows, computed once and rendered in each language."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from edgepick.decide.scenarios import Scenario
from edgepick.records.decision import CandidateSummary, Decision
from edgepick.report import tables
from edgepick.report.charts import all_charts
from edgepick.report.i18n import tr

CHARTS = (("pareto", "chart_pareto"), ("ttft_vs_length", "chart_ttft"),
          ("sustained", "chart_sustain"), ("task_quality", "chart_tasks"),
          ("predicted_vs_measured", "chart_pvm"))
# The report's tables by name (report/tables.py builds them), by what they are built from.
FROM_SUMMARIES = {"template": tables.template_table, "predicted": tables.predicted_table,
                  "tasks": tables.task_table, "badcases": tables.badcase_table}
FROM_DECISION = {"ranking": tables.ranking_table, "gates": tables.gates_table,
                 "routes": tables.routes_table}


@dataclass
class ReportModel:
    summaries: list[CandidateSummary]
    decision: Decision
    scenario: Scenario
    device: str | None = None
    generated: str = field(
        default_factory=lambda: datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    charts: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.charts:
            self.charts = all_charts(self.summaries, self.decision, self.scenario)

    def table(self, name: str, lang: str):
        """One of the report's tables in `lang`, as (header, rows)."""
        if name in FROM_DECISION:
            return FROM_DECISION[name](self.decision, lang)
        return FROM_SUMMARIES[name](self.summaries, lang)

    def scenario_description(self, lang: str) -> str:
        sc = self.scenario
        return sc.description_zh if lang == "zh" and sc.description_zh else sc.description

    def explanation(self, lang: str):
        """The decision's explanation in `lang` (the stored one is English)."""
        if lang == "en":
            return self.decision.explanation
        from edgepick.decide.explain import explain

        return explain(self.decision, {s.candidate: s for s in self.summaries}, self.scenario,
                       lang)

    def recommendation(self, lang: str) -> str:
        """'smollm2-Q8_0 (provisional)', or the none text."""
        d = self.decision
        if d.recommendation is None:
            return tr("none", lang)
        return f"{d.recommendation} ({tr(d.status, lang)})"

    def chart_titles(self, lang: str) -> list[tuple[str, str]]:
        return [(name, tr(key, lang)) for name, key in CHARTS]
