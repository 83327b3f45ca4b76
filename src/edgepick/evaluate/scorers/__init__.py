"""Scorers, one module each, registered by the task types they score.

A scorer turns (item, raw output) into an ItemScore: a primary score in [0, 1], a pass/fail
verdict, whether the output had the expected format, and figures for the task's extra metrics.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Protocol

from edgepick.errors import EdgepickError

_MODULES = ("labels", "extraction", "qa", "summary", "numeric", "code")
_REGISTRY: dict[str, "Scorer"] = {}


@dataclass
class ItemScore:
    score: float
    correct: bool
    format_ok: bool
    why: str = ""  # for a failed item: what was wrong, in a few words
    details: dict = field(default_factory=dict)


class Scorer(Protocol):
    name: str

    def score(self, item, output: str) -> ItemScore: ...

    def aggregate(self, items: list, scores: list[ItemScore]) -> dict[str, float]:
        """Task-level extras over a group of items (e.g. macro-F1)."""


def register_scorer(*tasks: str) -> Callable[[type], type]:
    def deco(cls: type) -> type:
        inst = cls()
        for t in tasks:
            _REGISTRY[t] = inst
        return cls

    return deco


def get_scorer(task: str) -> Scorer:
    # Importing a scorer module registers it; some may already be imported on their own.
    for mod in _MODULES:
        importlib.import_module(f"edgepick.evaluate.scorers.{mod}")
    if task not in _REGISTRY:
        raise EdgepickError(f"no scorer registered for task '{task}'")
    return _REGISTRY[task]


def mean_of(scores: list[ItemScore], key: str) -> float:
    vals = [float(s.details[key]) for s in scores if key in s.details]
    return sum(vals) / len(vals) if vals else 0.0
