"""The consistency stage's entry point: greedy answers of a candidate and its reference on one
eval set, stored (seed 000 §5.4: after conversion or quantization, check that the answers stay
the same before trusting the faster build)."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

from edgepick.evaluate.consistency import check_limits, consistency
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.records.candidate import DEFAULTS
from edgepick.records.fidelity import ConsistencyResult
from edgepick.records.model_ref import ModelRef
from edgepick.store.identity import file_sha256, ref_identity

KIND = "consistency"


class ConsistencyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reference: ModelRef
    candidate: ModelRef
    data: str  # an eval JSONL: each usable line's messages or prompt
    max_tokens: int = 64
    threshold: float = 0.9  # a verdict on the measurement, not part of it
    threads: int = Field(DEFAULTS.threads, ge=1)
    label: str | None = None


def store_key(req: ConsistencyRequest) -> str:
    """What the answers depend on: both models (content and engine), the data, the budget and
    the threads (a thread count can change llama.cpp's float sums, so a greedy token)."""
    blob = json.dumps(["consistency", ref_identity(req.reference), req.reference.backend,
                       ref_identity(req.candidate), req.candidate.backend, file_sha256(req.data),
                       req.max_tokens, req.threads])
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _judged(res: ConsistencyResult, threshold: float) -> ConsistencyResult:
    return res.model_copy(update={"threshold": threshold,
                                  "passed": res.identical_share >= threshold})


def run(req: ConsistencyRequest, store, progress: Tick = silent) -> ConsistencyResult:
    """The stored answers when this pair was compared on this data before, else generated and
    stored under kind "consistency"; either way judged against the request's threshold."""
    check_limits(req.max_tokens, req.threshold)
    key = store_key(req)
    name = req.label or req.candidate.label
    held = store.get(KIND, key) if store is not None else None
    if held is not None:
        res = ConsistencyResult.model_validate({k: v for k, v in held.items() if k != "name"})
        return _judged(res, req.threshold)

    def on_step(ev: ProgressEvent) -> None:
        progress(ProgressEvent(ev.done, ev.total, f"{name}: {ev.what}"))

    res = consistency(req.reference, req.candidate, req.data, max_tokens=req.max_tokens,
                      threshold=req.threshold, threads=req.threads, progress=on_step)
    if store is not None:
        store.put(KIND, key, dict(res.model_dump(mode="json"), name=name), label=name)
    return res
