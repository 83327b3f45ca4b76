"""Speculative decoding as a runtime setting (seed 003 §2.3: speculative sampling keeps a
device within its power budget): which kind llama-server runs, and its draft model when the
kind needs one.

    runtime: {speculative: [none, {type: ngram-mod}, {type: draft-simple, model: d.gguf, n_max: 8}]}

The kinds are llama.cpp's own (common/speculative.cpp of the pinned llama.cpp,
`common_speculative_type_from_name`); `draft` is taken as `draft-simple`, the name llama.cpp's
docs/speculative.md gives the draft-model kind. The flags are those of common/arg.cpp
(`--spec-type`, `-md`, `--spec-draft-n-max`, ...). A draft's content (its SHA-256) enters stored
keys, its path does not, as with an adapter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import (BaseModel, ConfigDict, Field, field_validator, model_serializer,
                      model_validator)

from edgepick.errors import known_name

# common/speculative.cpp's names, in its order (none is written `none` or left out)
SPEC_TYPES = ("draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark",
              "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")
# the kinds that read a second GGUF given with -md (draft-mtp uses the target's own head)
NEEDS_MODEL = frozenset({"draft-simple", "draft-eagle3", "draft-dflash", "draft-dspark"})
ALIASES = {"draft": "draft-simple"}


class Speculation(BaseModel):
    """One kind of speculative decoding with its draft lengths. `n_max`/`n_min` are the draft
    lengths of the kind (`--spec-draft-n-max`/`-n-min`, or `--spec-ngram-mod-n-max`/`-n-min`
    for ngram-mod, whose own lengths llama.cpp keeps apart); unset keeps llama.cpp's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    model: str | None = None  # the draft GGUF (the kinds in NEEDS_MODEL)
    sha256: str | None = None  # the draft's content, filled where the plan is read
    n_max: int | None = Field(None, ge=0, le=1024)
    n_min: int | None = Field(None, ge=0, le=1024)
    p_min: float | None = Field(None, ge=0, le=1)  # --spec-draft-p-min (draft kinds)

    @field_validator("type", mode="before")
    @classmethod
    def _known(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        v = ALIASES.get(v, v)
        return known_name(v, ("none",) + SPEC_TYPES, "speculative decoding type")

    @model_validator(mode="after")
    def _model_where_needed(self) -> "Speculation":
        if self.type in NEEDS_MODEL and not self.model:
            raise ValueError(f"speculative type {self.type} needs a draft model (model: FILE)")
        if self.type not in NEEDS_MODEL and self.model:
            raise ValueError(f"speculative type {self.type} takes no draft model")
        if self.type not in NEEDS_MODEL and self.p_min is not None:
            raise ValueError(f"p_min is a draft model's setting, not {self.type}'s")
        if self.n_min is not None and self.n_max is not None and self.n_min > self.n_max:
            raise ValueError(f"n_min {self.n_min} is above n_max {self.n_max}")
        return self

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: Any) -> dict:
        # unset lengths and an absent draft are left out: deploy.yaml and keys stay short
        return {k: v for k, v in handler(self).items() if v is not None}

    def tag(self) -> str:
        """Its part of a candidate's name: `ngram-mod`, `draft-simple:d-q4_0:8`."""
        parts = [self.type]
        if self.model:
            parts.append(Path(self.model).stem)
        if self.n_max is not None:
            parts.append(str(self.n_max))
        return ":".join(parts)

    def server_flags(self) -> list[str]:
        """llama-server's flags for this kind (common/arg.cpp of the pinned llama.cpp)."""
        cmd = ["--spec-type", self.type]
        if self.model:
            cmd += ["-md", self.model]
        prefix = "--spec-ngram-mod" if self.type == "ngram-mod" else "--spec-draft"
        if self.n_max is not None:
            cmd += [f"{prefix}-n-max", str(self.n_max)]
        if self.n_min is not None:
            cmd += [f"{prefix}-n-min", str(self.n_min)]
        if self.p_min is not None:
            cmd += ["--spec-draft-p-min", f"{self.p_min:g}"]
        return cmd

    def key_dict(self) -> dict:
        """What a stored key holds: the draft's content, not where it lies."""
        data = self.model_dump()
        data.pop("model", None)
        return data


def parse_speculative(value: Any) -> Any:
    """`none` (or null) is no speculation; a bare kind name is that kind with its defaults."""
    if value is None or value == "none" or (isinstance(value, dict)
                                            and value.get("type") == "none" and len(value) == 1):
        return None
    if isinstance(value, str):
        return {"type": value}
    return value


class SpecFigures(BaseModel):
    """One kind on one task, against plain decoding on the same items (bench/speculation.py
    measures them; decide reads them from the store)."""

    task: str
    setting: str  # the kind's tag
    items: int
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    acceptance: float | None
    acceptance_low: float | None
    acceptance_high: float | None
    mean_accepted_len: float | None
    draft_share: float | None  # of the decode time
    identical: int  # items whose greedy text equals plain decoding's
    identical_low: float
    identical_high: float
    # "wins" | "loses" | "undetermined" (the speed-up's interval against 1); "idle": it drafted
    # nothing on these items, so whatever the speeds say is not its doing
    verdict: str
    drafting_items: int | None = None  # items it drafted on (the speed-up is over these)


class TaskSpeculation(BaseModel):
    """Decide's choice for one task: the kind it serves with (None: plain decoding) and why."""

    task: str
    chosen: Speculation | None = None
    # wins: the chosen kind's speed-up interval lies above 1 and it kept every greedy answer;
    # otherwise why plain decoding stays: loses | undetermined | idle | changed (a kind altered
    # some greedy answer) | unmeasured (no figures for this task)
    reason: str
    figures: list[SpecFigures] = Field(default_factory=list)  # every kind measured on it


class SpeculationChoice(BaseModel):
    """Speculative decoding per task for the recommended model (decide/speculation.py), from
    the newest per-task measurement of its file (`edgepick speculate`)."""

    candidate: str
    measured: str  # the store key of the measurement read
    engine: str = "llama_server"
    base: dict = Field(default_factory=dict)  # the settings it was measured under
    timing_gap: float | None = None  # client vs llama-server decode speed, largest gap
    tasks: list[TaskSpeculation] = Field(default_factory=list)
    # how deploy.yaml carries it: "off" (plain everywhere), "everywhere" (one kind for every
    # task: runtime.speculative), "per-task" (a second engine over the same file for the tasks
    # it wins, by route), "report-only" (not applied; `note` says why)
    applied: str = "off"
    note: str | None = None
