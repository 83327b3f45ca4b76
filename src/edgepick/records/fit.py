"""The fit planner's estimate for one model × quant × context on one device."""

from __future__ import annotations

from pydantic import BaseModel, Field

from edgepick.records.placement import PlacementPlan


class FitEstimate(BaseModel):
    model: str
    quant: str
    ctx: int
    kv_type: str  # the K cache's type (-ctk)
    device: str
    kv_type_v: str | None = None  # the V cache's type (-ctv); None in rows stored before it
    flash_attn: bool = True
    n_batch: int = 512  # as llama.cpp uses it: min(n_ctx, n_batch)
    n_ctx_cells: int | None = None  # the context llama.cpp allocates: padded to 256
    weights_bytes: int
    weights_exact: bool  # True when read from the file's own tensor types
    kv_cache_bytes: int
    overhead_bytes: int  # runtime baseline + context structures + activations + repacked copies
    overhead_parts: dict[str, int] = Field(default_factory=dict)
    # llama.cpp's reserved compute buffer (its log's `CPU compute buffer size`, fit/compute.py):
    # the settings' cost as the engine asks for it; the need counts only what a batch touches
    compute_buffer_bytes: int | None = None
    # the need (fit/need.py): anonymous memory + file pages read while running; the verdict's
    # figure. weights + KV + overhead - reclaimable.
    total_bytes: int
    memory_anon_bytes: int | None = None
    memory_file_bytes: int | None = None
    # mapped pages never read after load (repacked originals, an untied embedding): resident
    # until the kernel wants the memory back, never need
    reclaimable_bytes: int = 0
    reclaimable_parts: dict[str, int] = Field(default_factory=dict)
    mmap: bool = True
    n_params: int | None = None
    n_active_params: int | None = None  # read per decoded token (MoE: its active experts)
    prefill_basis: str | None = None  # the assumption the prefill estimate makes
    warnings: list[str] = Field(default_factory=list)  # what the shape reader approximated
    budget_bytes: int
    margin: float
    verdict: str  # fits | tight | no
    kv_fill_tokens: int  # tokens in the cache while decoding, for the speed figures
    bytes_per_token: int  # weights (MoE: active experts) + KV read to decode one token at that fill
    decode_tps_bound: float
    decode_tps_estimate: float
    # the measured speed to expect: the estimate spread by the held-out check's predicted ÷
    # measured range for its basis (fit/speed.py HELDOUT_RATIOS); None when never validated
    decode_tps_band: tuple[float, float] | None = None
    # estimate at other KV fills (cached tokens -> tok/s), to compare with a measurement made at
    # another fill; threads and n_ubatch are the conditions the estimate holds for
    decode_curve: dict[int, float] = Field(default_factory=dict)
    decode_threads: int | None = None  # None: not tied to a thread count (bandwidth alone)
    n_ubatch: int = 512
    efficiency: float
    # what the estimate rests on: "engine probe" (this device's decode calibration), "AVX2
    # constants", "efficiency 0.65" (weights only, no calibration for this CPU) or "--efficiency"
    decode_basis: str = "AVX2 constants"
    prefill_tps_estimate: float | None
    higher_precision: dict[str, str] = Field(default_factory=dict)  # tensor class -> type kept
    fallbacks: list[str] = Field(default_factory=list)  # tensors whose rows forced another type
    risks: list[str] = Field(default_factory=list)  # task-prior warnings (seed 000 §3.3)
    # memory per device for the candidate's placement (fit/device_plan.py); None: no placement
    # asked for, the whole model on the host
    placement: PlacementPlan | None = None


def decode_tps_at(curve: dict, fill: float) -> float | None:
    """A stored estimate read at `fill` cached tokens: linear in seconds per token between the
    two nearest kept fills (exact where no sliding-window cap falls between them)."""
    points = sorted((int(f), float(v)) for f, v in (curve or {}).items() if v)
    if not points:
        return None
    if fill <= points[0][0]:
        return points[0][1]
    for (f0, v0), (f1, v1) in zip(points, points[1:]):
        if fill <= f1:
            lam = (fill - f0) / (f1 - f0)
            return 1.0 / ((1 - lam) / v0 + lam / v1)
    return points[-1][1]


class StoredFit(FitEstimate):
    """A fit row as the fit stage stores it (fit/stage.py): the estimate, the file it is for
    (None: an estimate with no candidate file, such as a quant not built yet), its source and
    the label the plan gave it."""

    model: str | None = None
    source: str | None = None
    label: str | None = None
    # the candidate's settings name (RuntimeSettings.variant: runtime axes, an adapter), so
    # decide gives the estimate to that candidate and not to the plain file's
    variant: str | None = None
    adapter: str | None = None  # the LoRA adapter counted in the estimate
