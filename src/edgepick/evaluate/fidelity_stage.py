"""The fidelity stage's entry point: one candidate against its same-tokenizer reference, stored
(seed 000 §2.3: KL divergence and top-1 agreement say how far quantization moved the model)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from edgepick.evaluate.fidelity import fidelity
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.records.candidate import DEFAULTS, RuntimeSettings
from edgepick.records.fidelity import FidelityResult
from edgepick.records.model_ref import ModelRef
from edgepick.store.identity import file_sha256, ref_identity

KIND = "fidelity"


class FidelityRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    reference: ModelRef
    candidate: ModelRef
    text: str  # a UTF-8 file (read like llama-perplexity's -f)
    ctx: int = Field(512, ge=4)
    max_chunks: int | None = Field(None, ge=1)
    threads: int = Field(DEFAULTS.threads, ge=1)
    cache: bool = True  # keep the reference's log-probs on disk for the next candidate
    label: str | None = None
    # the candidate's runtime settings (a runtime-axes candidate: its KV type, flash attention,
    # micro-batch); None: the baseline every comparison used before
    settings: RuntimeSettings | None = None


# the settings that can change the logits, applied to the candidate; threads and mmap cannot
# (docs/plan.md, "Runtime settings as an axis")
LOGIT_SETTINGS = ("kv_type", "flash_attn", "n_ubatch", "swa_full")
# the settings that leave the model's next-token distribution as it is. Speculative decoding
# (records/speculative.py) is one: llama.cpp samples every token it emits from the target's own
# logits and keeps a draft token only when it equals that sample (common/sampling.cpp,
# common_sampler_sample_and_accept_n), one draw per emitted token, so greedy text and, for a
# given seed, sampled text are the target's up to the numerics of a batched verification
# (tests/bench/test_speculation.py checks both). A placement (records/placement.py) is another:
# it moves where each layer is computed, not what; the logits are read in process on the CPU,
# so a device's own kernels' rounding is not part of this comparison
PRESERVING = ("threads", "mmap", "speculative", "placement")


def store_key(req: FidelityRequest) -> str:
    parts = ["fidelity", ref_identity(req.reference), ref_identity(req.candidate),
             file_sha256(req.text), req.ctx, req.max_chunks]
    if req.settings is not None:  # each combination its own row (threads and mmap included,
        # though they cannot change the logits: tests/evaluate/test_fidelity_settings.py)
        parts.append({k: getattr(req.settings, k) for k in LOGIT_SETTINGS}
                     | {"variant": req.settings.variant})
        if req.settings.adapter is not None:  # its content, not its path
            parts.append(req.settings.key_dict()["adapter"])
    blob = json.dumps(parts)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def run(req: FidelityRequest, store, progress: Tick = silent) -> FidelityResult:
    """The stored result when this comparison was made before, else measured and stored under
    kind "fidelity"."""
    key = store_key(req)
    name = req.label or req.candidate.label
    held = store.get(KIND, key) if store is not None else None
    if held is not None:
        return FidelityResult.model_validate({k: v for k, v in held.items()
                                              if k not in ("name", "variant")})

    def on_step(ev: ProgressEvent) -> None:
        progress(ProgressEvent(ev.done, ev.total, f"{name}: {ev.what}"))

    res = fidelity(req.reference, req.candidate, Path(req.text), ctx=req.ctx,
                   threads=req.threads, max_chunks=req.max_chunks, progress=on_step,
                   cache=req.cache, runtime=req.settings)
    if store is not None:
        variant = {"variant": req.settings.variant} if req.settings and req.settings.variant \
            else {}
        store.put(KIND, key, dict(res.model_dump(mode="json"), name=name, **variant),
                  label=name)
    return res
