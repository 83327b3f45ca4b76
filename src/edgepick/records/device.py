"""A target device: what memory and bandwidth it leaves to the model."""

from __future__ import annotations

from pydantic import BaseModel, Field


class DeviceProfile(BaseModel):
    name: str
    description: str = ""
    total_ram_bytes: int
    model_budget_bytes: int  # RAM the OS and the app leave to the model
    bandwidth_gbps: float  # sustained memory read bandwidth, GB/s (1e9 bytes)
    compute_gflops: float | None = None  # usable for prefill (CPU/GPU/NPU peak, FP16-ish)
    power_budget_w: float | None = None
    cores: int | None = None
    cpu_features: list[str] = Field(default_factory=list)
    accelerator: str | None = None
    notes: str = ""
    measured: bool = False  # True when probed on this machine rather than taken from a spec sheet
    extra: dict = Field(default_factory=dict)  # thermal, battery, load readings from a probe
