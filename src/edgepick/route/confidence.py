"""Edge confidence from the edge's own token log-probabilities, and format validators: the two
things a cascade escalates on (seed 001 §6.3, seed 000 §6.4 "端侧置信度")."""

from __future__ import annotations

import math
import re
from typing import Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from edgepick.evaluate.scorers.extraction import find_json_object
from edgepick.evaluate.scorers.labels import find_label

ConfidenceMethod = Literal["mean", "min", "first_k"]


class ConfidenceSettings(BaseModel):
    """How a cascade turns token log-probabilities into one confidence in [0, 1]."""

    model_config = ConfigDict(extra="forbid")
    method: ConfidenceMethod = "mean"
    k: int = Field(8, ge=1)  # first_k: the answer's first k tokens, where a label or a number sits
    threshold: float = Field(0.5, ge=0.0, le=1.0)  # escalate below this


def confidence(logprobs: list[float] | None, method: ConfidenceMethod = "mean",
               k: int = 8) -> float | None:
    """exp(mean log p) (the geometric-mean token probability), exp(min log p) (the weakest
    token), or exp(mean log p) over the first k tokens; None when there is nothing to judge."""
    lps = [float(x) for x in logprobs or [] if x is not None and math.isfinite(float(x))]
    if not lps:
        return None
    if method == "min":
        return math.exp(min(lps))
    if method == "first_k":
        lps = lps[:k]
    return math.exp(sum(lps) / len(lps))


class FormatValidator(BaseModel):
    """A check the edge answer must pass, else the cascade escalates (seed 003 §8.3: format
    alignment). `json`: an object (valid against `schema` when given); `labels`: one of
    `labels`; `regex`: matches `pattern` somewhere."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["json", "labels", "regex"]
    schema_: dict | None = Field(None, alias="schema")
    labels: list[str] | None = None
    pattern: str | None = None

    def check(self, text: str) -> tuple[bool, str]:
        """(passed, why not)."""
        if self.kind == "json":
            obj, _ = find_json_object(text)
            if obj is None:
                return False, "no JSON object in the answer"
            if self.schema_ is not None:
                err = jsonschema.validators.validator_for(self.schema_)(self.schema_)
                first = next(iter(err.iter_errors(obj)), None)
                if first is not None:
                    return False, f"JSON fails the schema: {first.message[:80]}"
            return True, ""
        if self.kind == "labels":
            if find_label(text, {lb: [lb] for lb in self.labels or []}) is None:
                return False, "none of the labels in the answer"
            return True, ""
        if re.search(self.pattern or "", text) is None:
            return False, f"answer does not match /{self.pattern}/"
        return True, ""
