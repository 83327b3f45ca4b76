"""The fit stage's entry point: predict memory and speed for resolved models and store each
estimate (seed 000 §7.2: rule out what cannot run before measuring anything; §2.1)."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

from edgepick.backends.registry import check_support
from edgepick.fit.device_plan import placed_estimate
from edgepick.fit.placement import with_devices
from edgepick.fit.planner import fit_one
from edgepick.models.adapter import read_adapter
from edgepick.models.spec import ref_spec
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.records.candidate import DEFAULTS
from edgepick.records.device import DeviceProfile
from edgepick.records.fit import FitEstimate
from edgepick.records.model_ref import ModelRef
from edgepick.records.placement import Placement

KIND = "fit"


class FitTarget(BaseModel):
    """`model` is read for its shape; `quant` None means the file's own tensor types. `file` is
    the file the estimate describes (the model itself, or a build's target path); None for a
    hypothetical type, which is shown but describes no candidate."""

    model_config = ConfigDict(extra="forbid")

    model: ModelRef
    quant: str | None = None
    file: str | None = None
    label: str | None = None
    adapter: str | None = None  # a LoRA adapter GGUF loaded with the model (its bytes count)
    draft: str | None = None  # a speculative decoding draft GGUF run beside it (its need counts)
    variant: str | None = None  # the candidate's settings name, stored for decide


class FitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    targets: list[FitTarget] = Field(..., min_length=1)
    ctxs: list[int] = Field(default_factory=lambda: [DEFAULTS.n_ctx])
    device: DeviceProfile
    kv_type: str = DEFAULTS.kv_type
    margin: float = 0.20
    efficiency: float | None = None
    fill: int | None = None
    n_ubatch: int = DEFAULTS.n_ubatch
    swa_full: bool = False
    mmap: bool = DEFAULTS.mmap
    flash_attn: bool = DEFAULTS.flash_attn
    n_batch: int = DEFAULTS.n_batch
    kv_type_v: str | None = None  # the V cache's type when it differs from K's (-ctv)
    # where each tensor lives (a candidate's runtime placement): each estimate then carries its
    # per-device plan (fit/device_plan.py) and is judged against each device's own pool
    placement: Placement | None = None

    @classmethod
    def for_models(cls, models: list[ModelRef], quants: list[str],
                   adapter: str | None = None, **kw) -> "FitRequest":
        """Each model at each type: 'native' describes the file itself."""
        targets = [FitTarget(model=m, quant=None if q == "native" else q,
                             file=m.path if q == "native" and m.kind in ("file", "bundled")
                             else None,
                             adapter=adapter)
                   for m in models for q in quants]
        return cls(targets=targets, **kw)


def _adapter_bytes(t: FitTarget) -> int:
    """What llama.cpp allocates for the target's adapter (0 without one), after checking it
    fits the model file (models/adapter.py, llama-adapter.cpp's own checks)."""
    if t.adapter is None:
        return 0

    # the shape source (a build's target file may not exist yet; its shapes are the source's)
    model = str(t.model.path)
    return read_adapter(t.adapter, model if model.endswith(".gguf") else None).n_bytes


def draft_need(t: FitTarget, ctx: int, req: "FitRequest") -> tuple[int, int]:
    """The anonymous and file-backed bytes the target's draft model needs beside it ((0, 0)
    without one): llama-server loads it with a context of the same size and cache type
    (tools/server/server-context.cpp) in the target's process, so the process's fixed
    baseline is not counted twice."""
    if t.draft is None:
        return 0, 0
    spec = ref_spec(ModelRef.file(t.draft))
    est = fit_one(spec, None, ctx, req.device, kv_type=req.kv_type, margin=0.0,
                  n_ubatch=req.n_ubatch, mmap=req.mmap, flash_attn=req.flash_attn,
                  n_batch=req.n_batch, kv_type_v=req.kv_type_v, runtime_bytes=0)
    return est.memory_anon_bytes, est.memory_file_bytes


def _placed(est: FitEstimate, spec, t: FitTarget, req: FitRequest) -> FitEstimate:
    """`est` with the request's placement, for this model's layers, planned per device."""
    if req.placement is None:
        return est
    placement = with_devices(req.placement.resolved(spec.n_layers), req.device)
    est, plan = placed_estimate(est, spec, t.quant, placement, req.device, req.margin,
                                kv_type=req.kv_type, kv_type_v=req.kv_type_v,
                                flash_attn=req.flash_attn, n_batch=req.n_batch,
                                n_ubatch=req.n_ubatch, swa_full=req.swa_full, mmap=req.mmap,
                                fill=req.fill)
    return est.model_copy(update={"placement": plan})


def _key(payload: dict, device: DeviceProfile) -> str:
    # extra holds readings of the moment (load, sensors, the probe's cache entry): not the device
    dev = device.model_dump(mode="json", exclude={"extra"})
    blob = json.dumps(["fit", payload, dev], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def run(req: FitRequest, store, progress: Tick = silent) -> list[FitEstimate]:
    """One estimate per target and context, stored under kind "fit" (rows already held are
    linked to this run, not rewritten)."""
    out: list[FitEstimate] = []
    total = len(req.targets) * len(req.ctxs)
    specs = [ref_spec(t.model) for t in req.targets]
    for t, spec in zip(req.targets, specs):  # every pair checked before anything is estimated
        check_support(t.model.backend, spec)
    adapters = [_adapter_bytes(t) for t in req.targets]  # each read and checked once
    for t, spec, adapter_bytes in zip(req.targets, specs, adapters):
        for ctx in req.ctxs:
            progress(ProgressEvent(len(out), total, t.label or t.model.label))
            est = fit_one(spec, t.quant, ctx, req.device, kv_type=req.kv_type, margin=req.margin,
                          efficiency=req.efficiency, n_ubatch=req.n_ubatch, fill=req.fill,
                          swa_full=req.swa_full, mmap=req.mmap, flash_attn=req.flash_attn,
                          n_batch=req.n_batch, kv_type_v=req.kv_type_v,
                          adapter_bytes=adapter_bytes, draft=draft_need(t, ctx, req))
            est = _placed(est, spec, t, req)
            out.append(est)
            payload = est.model_dump(mode="json")
            if payload.get("placement") is None:  # none asked for: keys as before
                payload.pop("placement", None)
            payload["model"] = t.file  # the file the estimate is for; None: no candidate
            payload["source"] = t.model.path
            if t.model.remote is not None:  # where it lives, and which content it was
                payload["source"] = t.model.spec
                payload["remote"] = t.model.remote.identity
                if t.quant is None:  # the remote file itself: its candidate is named so
                    payload["model"] = t.model.locator
            payload["label"] = t.label
            for optional in ("adapter", "variant", "draft"):  # absent when unset: keys as before
                if getattr(t, optional) is not None:
                    payload[optional] = getattr(t, optional)
            key = _key(payload, req.device)
            if store is not None and not store.has(KIND, key):
                store.put(KIND, key, payload, label=t.label or t.model.label)
    progress(ProgressEvent(total, total, "done"))
    return out
