"""The per-task speculation measurement as a stage (`edgepick speculate`): a model, the kinds of
speculative decoding to try, an eval set's items per task → bench/speculation.py's requests and
figures, stored under kind "speculation" for decide to choose per task (decide/speculation.py).

A draft whose vocabulary is not the target's is refused in one line naming both files
(models/draft_vocab.py) and left out; the other kinds are measured. The key holds the model's
content, the settings, the kinds (a draft by its content), the items and the repeats, so the
same measurement is reused unless `fresh`.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

from edgepick.bench.speculation import ENGINE, SpecRequest, figures, run_requests, \
    timing_agreement
from edgepick.errors import EdgepickError
from edgepick.evaluate.items import EvalItem
from edgepick.evaluate.outputs import DEFAULT_MAX_TOKENS, budget
from edgepick.models.draft_vocab import draft_mismatch
from edgepick.progress import Tick, silent
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.model_ref import ModelRef
from edgepick.records.speculative import SpecFigures, Speculation
from edgepick.store.identity import file_sha256, ref_identity

KIND = "speculation"


class SpeculationRequest(BaseModel):
    """What to measure: `model` (a local GGUF) under `base` with each of `kinds`, against plain
    decoding, on `items` at their tasks' output budgets."""

    model_config = ConfigDict(frozen=True)

    model: ModelRef
    base: RuntimeSettings = Field(default_factory=RuntimeSettings)
    kinds: list[Speculation] = Field(min_length=1)
    items: list[EvalItem] = Field(min_length=1)
    eval_set: str | None = None  # the file the items came from (the record names it)
    budgets: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_MAX_TOKENS))
    max_tokens: int | None = Field(None, ge=1)  # a cap on every item's budget
    repeats: int = Field(1, ge=1, le=5)
    fresh: bool = False

    def capped_items(self) -> list[EvalItem]:
        """The items, each with its budget (its own, else its task's) at most `max_tokens`."""
        if self.max_tokens is None:
            return list(self.items)
        return [it.model_copy(update={"max_tokens": min(budget(it, self.budgets),
                                                        self.max_tokens)}) for it in self.items]


class SpeculationRecord(BaseModel):
    """One stored measurement: what was run, the figures per task and kind, every request."""

    key: str
    model: str  # the target file
    model_sha256: str
    label: str
    engine: str = ENGINE
    base: dict  # the settings (without speculation) it ran under
    kinds: list[dict]  # each kind measured (its draft by path and SHA-256)
    refused: dict[str, str] = Field(default_factory=dict)  # kind's tag -> why not measured
    eval_set: str | None = None
    items: list[str]  # item ids, in order
    repeats: int = 1
    figures: list[SpecFigures]
    timing_gap: float | None = None  # client vs llama-server decode speed (largest gap)
    requests: list[SpecRequest]
    reused: bool = False  # read from the store rather than measured now


def _with_draft_sha(kind: Speculation) -> Speculation:
    if kind.model and not kind.sha256:
        return kind.model_copy(update={"sha256": file_sha256(kind.model)})
    return kind


def _key(req: SpeculationRequest, kinds: list[Speculation]) -> str:
    payload = {"model": ref_identity(req.model), "engine": ENGINE,
               "settings": req.base.key_dict(), "kinds": [k.key_dict() for k in kinds],
               "items": [it.model_dump(mode="json") for it in req.capped_items()],
               "budgets": req.budgets, "repeats": req.repeats}
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


def refusal(model: ModelRef, kind: Speculation) -> str | None:
    """Why `kind` cannot speculate for `model` (one line naming both files), else None."""
    if not kind.model:
        return None
    try:
        return draft_mismatch(str(model.path), kind.model)
    except (EdgepickError, OSError) as exc:
        return f"draft {kind.model}: {exc}"


def run(req: SpeculationRequest, store, progress: Tick = silent) -> SpeculationRecord:
    """Measure (or reuse) and store; raises when no kind is left to measure."""
    if req.model.is_endpoint or req.model.path is None:
        raise EdgepickError(f"{req.model.spec}: speculation is measured on a local GGUF "
                            "run by llama-server, not on an endpoint")
    refused, kinds = {}, []
    for kind in req.kinds:
        why = refusal(req.model, kind)
        if why:
            refused[kind.tag()] = why
        else:
            kinds.append(_with_draft_sha(kind))
    if not kinds:
        raise EdgepickError("no kind of speculative decoding left to measure: "
                            + "; ".join(refused.values()))
    base = req.base.model_copy(update={"speculative": None})
    key = _key(req, kinds)
    if not req.fresh and (held := store.get(KIND, key)) is not None:
        rec = SpeculationRecord.model_validate(held)
        # the figures as the current analysis makes them from the stored requests
        return rec.model_copy(update={"reused": True, "refused": refused,
                                      "figures": figures(rec.requests),
                                      "timing_gap": timing_agreement(rec.requests)})
    settings = [base.model_copy(update={"speculative": k}) for k in kinds]
    reqs = run_requests(req.model, base, settings, req.capped_items(), req.budgets,
                        repeats=req.repeats, progress=progress)
    path = str(req.model.path)
    rec = SpeculationRecord(
        key=key, model=path, model_sha256=file_sha256(path), label=req.model.label,
        base=base.model_dump(mode="json", exclude_none=True),
        kinds=[k.model_dump(mode="json") for k in kinds], refused=refused,
        eval_set=req.eval_set, items=[it.id for it in req.items],
        repeats=req.repeats, figures=figures(reqs), timing_gap=timing_agreement(reqs),
        requests=reqs)
    store.put(KIND, key, rec.model_dump(mode="json"), label=req.model.label)
    return rec
