"""The decision put into words once, in every language, for the store and the report
(records/decision_texts.py): decide, then render."""

from __future__ import annotations

from edgepick.decide.engineering import difficulty
from edgepick.decide.explain import explain
from edgepick.decide.gates import gate_text, measured_memory
from edgepick.decide.scenarios import Scenario
from edgepick.decide.scoring import weighted_accuracy
from edgepick.decide.texts import gate_label, reasons_text
from edgepick.records.decision import CandidateSummary, Decision
from edgepick.records.decision_texts import (LANGUAGES, CandidateTexts, DecisionTexts, GateLine,
                                             ScenarioFacts)
from edgepick.records.deploy import Gate


def scenario_facts(sc: Scenario) -> ScenarioFacts:
    description = {"en": sc.description}
    if sc.description_zh:
        description["zh"] = sc.description_zh
    return ScenarioFacts(
        name=sc.name, description=description,
        constraints={k: v for k, v in sc.constraints.model_dump().items() if v is not None},
        weights=sc.weights.normalised(), task_weights=dict(sc.task_weights or {}))


def _gate_line(g: Gate) -> GateLine:
    return GateLine(label={lg: gate_label(g, lg) for lg in LANGUAGES}, shown=gate_text(g),
                    limit_shown=gate_text(Gate(metric=g.metric, value=g.limit)))


def describe(decision: Decision, summaries: list[CandidateSummary],
             sc: Scenario) -> DecisionTexts:
    """Every sentence, label and derived figure the report shows, in every language."""
    by_name = {s.candidate: s for s in summaries}
    explanations = {"en": decision.explanation}
    explanations.update({lg: explain(decision, by_name, sc, lg) for lg in LANGUAGES
                         if lg != "en"})
    cands: dict[str, CandidateTexts] = {}
    for s in summaries:
        cands[s.candidate] = CandidateTexts(
            difficulty=difficulty(s), memory_need=measured_memory(s),
            quality=weighted_accuracy(s, sc.task_weights or {}))
    for r in decision.ranking:
        c = cands.setdefault(r.candidate, CandidateTexts())
        c.reasons = {lg: reasons_text(r, lg) for lg in LANGUAGES}
        c.gates = [_gate_line(g) for g in r.gates]
    return DecisionTexts(scenario=scenario_facts(sc), explanations=explanations, candidates=cands)
