"""Per-item values in [0, 1] of the built-in gates' evaluation figures, which sequential looks
judge after each look: each is the `item_values` producer its gate's entry in data/gates.yaml
names. (candidate outcomes, reference outcomes or None) -> the values, or None when no item
carries the figure."""

from __future__ import annotations

import numpy as np

from edgepick.evaluate import anytime
from edgepick.evaluate.gap import item_values
from edgepick.records.evaluation import ItemOutcome

Outcomes = list[ItemOutcome]


def unacceptable(cand: Outcomes, ref: Outcomes | None) -> np.ndarray:
    return np.asarray(item_values(cand, "unacceptable"))


def format_compliance(cand: Outcomes, ref: Outcomes | None) -> np.ndarray:
    return np.asarray(item_values(cand, "format_ok"))


def strict_format(cand: Outcomes, ref: Outcomes | None) -> np.ndarray | None:
    has = [o for o in cand if o.strict_format is not None]
    return np.asarray(item_values(has, "strict_format")) if has else None


def quality(cand: Outcomes, ref: Outcomes | None) -> np.ndarray:
    return np.asarray([o.score for o in cand], dtype=float)


def extra_badcases(cand: Outcomes, ref: Outcomes | None) -> np.ndarray | None:
    """The paired badcase difference, mapped into [0, 1] (evaluate/anytime.paired)."""
    if ref is None:
        return None
    return anytime.paired(item_values(cand, "badcase"), item_values(ref, "badcase"))


def tool_choice(cand: Outcomes, ref: Outcomes | None) -> np.ndarray | None:
    v = [float(bool(o.details["tool_ok"])) for o in cand if "tool_ok" in o.details]
    return np.asarray(v) if v else None


def schema_valid(cand: Outcomes, ref: Outcomes | None) -> np.ndarray | None:
    v = [float(bool(o.details["schema_valid"])) for o in cand if o.details.get("attempted")]
    return np.asarray(v) if v else None
