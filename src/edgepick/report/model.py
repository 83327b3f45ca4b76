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

    def template(self, lang: str):
        return tables.template_table(self.summaries, lang)

    def ranking(self, lang: str):
        return tables.ranking_table(self.decision, lang)

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

    def gates(self, lang: str):
        return tables.gates_table(self.decision, lang)

    def routes(self, lang: str):
        return tables.routes_table(self.decision, lang)

    def recommendation(self, lang: str) -> str:
        """'smollm2-Q8_0 (provisional)', or the none text."""
        d = self.decision
        if d.recommendation is None:
            return tr("none", lang)
        return f"{d.recommendation} ({tr(d.status, lang)})"

    def predicted(self, lang: str):
        return tables.predicted_table(self.summaries, lang)

    def tasks(self, lang: str):
        return tables.task_table(self.summaries, lang)

    def badcases(self, lang: str):
        return tables.badcase_table(self.summaries, lang)

    def chart_titles(self, lang: str) -> list[tuple[str, str]]:
        return [(name, tr(key, lang)) for name, key in CHARTS]
