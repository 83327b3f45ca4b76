"""Scorers, one module each, registered by the task types they score (seed 004 §2.3).

The shape every scorer returns, so the pipeline, the unacceptable rule and the decision can treat
all tasks alike (a new task, e.g. `tool_call`, is one module and one entry point line):

`score(item, output) -> ItemScore` with
- `score`: the task's primary per-item score in [0, 1] (accuracy 0/1, field F1, ROUGE-L, ...);
- `correct`: the task's documented per-item pass rule (the class attribute `pass_rule` says it in
  one sentence); an item that is not correct is a badcase;
- `format_ok`: the output holds an answer in the form the task needs, found leniently (a label
  inside a sentence, JSON inside prose or a fence, the marked number); free-text tasks: non-empty;
- `format_error`: when `format_ok` is False, what is wrong with the form: "no_answer" (no
  label / no number / no JSON object), "invalid_json" (JSON that does not parse as the required
  object) or "invalid_schema" (a complete object that breaks the item's schema; counted as the
  unacceptable reason invalid_json, but never as "truncated" by the budget); None for free-text
  tasks, whose empty outputs are caught as "empty";
- `strict_format`: the bare answer with nothing around it (the label alone, the JSON object
  alone, the number alone), or None when the task has no strict form; feeds `strict_format_rate`;
- `why`: for a failed item, what was wrong in a few words; `details`: JSON-able per-item figures
  the scorer's `aggregate` needs.

The pipeline adds the reasons no scorer can see (engine error, cut off, loop, language, critical).
A scorer is declared like every plugin, edgepick's own included: one line per task type it
scores in the `edgepick.scorers` entry point group (pyproject.toml), `task = "module:ScorerClass"`
(a class is instantiated once per task, or an object with `score`), imported on first use by
edgepick.plugins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from edgepick.errors import EdgepickError
from edgepick.plugins import Plugins

FormatError = Literal["no_answer", "invalid_json", "invalid_schema"]


@dataclass
class ItemScore:
    score: float
    correct: bool
    format_ok: bool
    why: str = ""  # for a failed item: what was wrong, in a few words
    details: dict = field(default_factory=dict)
    strict_format: bool | None = None
    format_error: FormatError | None = None


class Scorer(Protocol):
    name: str
    pass_rule: ClassVar[str]  # the per-item pass rule, one sentence (docs/evaluate.md)

    def score(self, item, output: str) -> ItemScore: ...

    def aggregate(self, items: list, scores: list[ItemScore]) -> dict[str, float]:
        """Task-level extras over a group of items (e.g. macro-F1)."""


def _as_scorer(task: str, obj: Any, where: str) -> Scorer:
    scorer = obj() if isinstance(obj, type) else obj
    if not callable(getattr(scorer, "score", None)):
        raise EdgepickError(f"scorer '{task}' ({where}) has no score(item, output)")
    return scorer


SCORERS = Plugins("edgepick.scorers", "scorer", check=_as_scorer,
                  unknown="no scorer registered for task '{name}'{hint} (known: {known})")


def get_scorer(task: str) -> Scorer:
    return SCORERS.load(task)


def scored_tasks() -> list[str]:
    """Every task type a registered scorer scores: this package's and the plugins'. An eval set
    may use any of them (evaluate/items.py)."""
    return SCORERS.names()


def mean_of(scores: list[ItemScore], key: str) -> float:
    vals = [float(s.details[key]) for s in scores if key in s.details]
    return sum(vals) / len(vals) if vals else 0.0
