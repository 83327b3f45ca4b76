"""What the decide stage says about its decision, in every language, stored with it.

Report renders a stored decision (docs/architecture.md, "Decide, then render"): the sentences,
labels and derived figures it shows are decided here once, by decide/wording.py, so report
imports nothing from decide and a stored decision renders the same on any later day.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

LANGUAGES = ("en", "zh")


class Explanation(BaseModel):
    why: list[str] = Field(default_factory=list)
    cost: list[str] = Field(default_factory=list)  # against the runner-up
    watch: list[str] = Field(default_factory=list)


class ScenarioFacts(BaseModel):
    """The scenario as the report states it: name, description, the limits set, the weights."""

    name: str
    description: dict[str, str] = Field(default_factory=dict)  # lang -> text
    constraints: dict[str, Any] = Field(default_factory=dict)  # only the limits that are set
    weights: dict[str, float] = Field(default_factory=dict)  # layer -> normalised weight
    task_weights: dict[str, float] = Field(default_factory=dict)


class GateLine(BaseModel):
    """One gate of one candidate as shown: its label per language, value and limit as text."""

    label: dict[str, str]  # lang -> "TTFT P99 at 3000 tokens"
    shown: str  # "6.7% [1.8%, 21.3%] (need)"
    limit_shown: str


class CandidateTexts(BaseModel):
    """A ranked candidate's reasons per language, its gates in ranking order, and the derived
    figures the tables and charts show (the score's own quality and the memory gate's need)."""

    reasons: dict[str, list[str]] = Field(default_factory=dict)
    gates: list[GateLine] = Field(default_factory=list)
    difficulty: str | None = None  # low | medium | high (decide/engineering.py)
    memory_need: int | None = None  # the measured need, VmHWM where no need was stored
    quality: float | None = None  # task accuracy under the scenario's task weights


class DecisionTexts(BaseModel):
    scenario: ScenarioFacts
    explanations: dict[str, Explanation] = Field(default_factory=dict)  # lang -> explanation
    candidates: dict[str, CandidateTexts] = Field(default_factory=dict)  # by candidate name

    def of(self, candidate: str) -> CandidateTexts:
        return self.candidates.get(candidate) or CandidateTexts()
