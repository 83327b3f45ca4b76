"""Everything a report shows, read from a stored decision and rendered in each language. The
words and derived figures are the decide stage's (decision.texts): report decides nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from edgepick.errors import EdgepickError
from edgepick.records.decision import CandidateSummary, Decision
from edgepick.records.decision_texts import DecisionTexts, ScenarioFacts
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
                 "routes": tables.routes_table, "team": tables.team_table}


@dataclass
class ReportModel:
    summaries: list[CandidateSummary]
    decision: Decision
    device: str | None = None
    generated: str = field(
        default_factory=lambda: datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    charts: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.decision.texts is None:
            raise EdgepickError("this decision was not put into words by the decide stage; "
                                "run `edgepick decide` (or `edgepick report`) to decide it again")
        if not self.charts:
            self.charts = all_charts(self.summaries, self.decision, self.texts)

    @property
    def texts(self) -> DecisionTexts:
        assert self.decision.texts is not None  # __post_init__ refused a decision without
        return self.decision.texts

    @property
    def scenario(self) -> ScenarioFacts:
        return self.texts.scenario

    def table(self, name: str, lang: str):
        """One of the report's tables in `lang`, as (header, rows)."""
        if name in FROM_DECISION:
            return FROM_DECISION[name](self.decision, lang)
        return FROM_SUMMARIES[name](self.summaries, self.texts, lang)

    def scenario_description(self, lang: str) -> str:
        d = self.scenario.description
        return d.get(lang) or d.get("en", "")

    def explanation(self, lang: str):
        """The decision's explanation in `lang`, as the decide stage wrote it."""
        return self.texts.explanations.get(lang) or self.decision.explanation

    def recommendation(self, lang: str) -> str:
        """'smollm2-Q8_0 (provisional)', or the none text."""
        d = self.decision
        if d.recommendation is None:
            return tr("none", lang)
        return f"{d.recommendation} ({tr(d.status, lang)})"

    def chart_titles(self, lang: str) -> list[tuple[str, str]]:
        return [(name, tr(key, lang)) for name, key in CHARTS]
