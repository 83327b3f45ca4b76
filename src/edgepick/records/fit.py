"""The fit planner's estimate for one model × quant × context on one device."""

from __future__ import annotations

from pydantic import BaseModel, Field


class FitEstimate(BaseModel):
    model: str
    quant: str
    ctx: int
    kv_type: str
    device: str
    weights_bytes: int
    weights_exact: bool  # True when read from the file's own tensor types
    kv_cache_bytes: int
    overhead_bytes: int  # runtime baseline + context structures + activations + repacked weights
    overhead_parts: dict[str, int] = Field(default_factory=dict)
    total_bytes: int
    budget_bytes: int
    margin: float
    verdict: str  # fits | tight | no
    kv_fill_tokens: int  # tokens in the cache while decoding, for the speed figures
    bytes_per_token: int  # weights + KV read to decode one token at that fill
    decode_tps_bound: float
    decode_tps_estimate: float
    efficiency: float
    # what the estimate rests on: "engine probe" (this device's decode calibration), "AVX2
    # constants", "efficiency 0.65" (weights only, no calibration for this CPU) or "--efficiency"
    decode_basis: str = "AVX2 constants"
    prefill_tps_estimate: float | None
    higher_precision: dict[str, str] = Field(default_factory=dict)  # tensor class -> type kept
    fallbacks: list[str] = Field(default_factory=list)  # tensors whose rows forced another type
    risks: list[str] = Field(default_factory=list)  # task-prior warnings (seed 000 §3.3)
