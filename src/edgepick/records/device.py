"""A target device: what memory and bandwidth it leaves to the model."""

from __future__ import annotations

import math

from pydantic import BaseModel, Field, field_validator, model_validator

from edgepick.records.compute_device import ComputeDevice, DeviceLink


class DecodeCalibration(BaseModel):
    """How the engine decodes on this device, relative to the planner's AVX2 constants
    (devices/engine_probe.py): seconds per token = weight bytes ÷ stream_gbps
    + the constants' compute time (at the profile's bandwidth_gbps), each weight type's times
    its compute_scales entry, or compute_scale for a type without one and for the fixed
    per-matmul cost
    + the attention scale × the constants' attention time. The attention scale is measured at a
    few K+V row widths (bytes per cached position and layer at F16) and interpolated between
    them in log width, held flat beyond them."""
    stream_gbps: float = Field(gt=0)  # the rate the engine streams weights at, GB/s
    compute_scale: float = Field(default=1.0, gt=0)
    compute_scales: dict[str, float] = Field(default_factory=dict)  # weight type -> scale
    attention_scales: dict[int, float] = Field(min_length=1)  # K+V row bytes -> scale
    method: str = "per term"  # or "one scale" when the per-term solve was not trustworthy
    threads: int | None = None  # the engine's thread count in the probe decodes
    timings: list[dict] = Field(default_factory=list)  # the probe decodes behind the scales

    @field_validator("compute_scales")
    @classmethod
    def _positive_compute(cls, v: dict[str, float]) -> dict[str, float]:
        if any(s <= 0 for s in v.values()):
            raise ValueError("compute scales must be positive")
        return v

    def compute_scale_for(self, weight_type: str) -> float:
        return self.compute_scales.get(weight_type, self.compute_scale)

    @field_validator("attention_scales")
    @classmethod
    def _positive(cls, v: dict[int, float]) -> dict[int, float]:
        if any(w <= 0 or s <= 0 for w, s in v.items()):
            raise ValueError("row widths and scales must be positive")
        return dict(sorted(v.items()))

    def attention_weights(self, row_bytes: float) -> list[float]:
        """Interpolation weights over attention_scales (in key order) at `row_bytes`."""
        widths = list(self.attention_scales)
        out = [0.0] * len(widths)
        if len(widths) == 1 or row_bytes <= widths[0]:
            out[0] = 1.0
            return out
        if row_bytes >= widths[-1]:
            out[-1] = 1.0
            return out
        i = next(k for k in range(1, len(widths)) if row_bytes <= widths[k])
        lam = math.log(row_bytes / widths[i - 1]) / math.log(widths[i] / widths[i - 1])
        out[i - 1], out[i] = 1.0 - lam, lam
        return out

    def attention_scale(self, row_bytes: float) -> float:
        return sum(w * s for w, s in zip(self.attention_weights(row_bytes),
                                         self.attention_scales.values()))


class DeviceProfile(BaseModel):
    name: str
    description: str = ""
    total_ram_bytes: int
    model_budget_bytes: int  # RAM the OS and the app leave to the model
    bandwidth_gbps: float  # sustained memory read bandwidth, GB/s (1e9 bytes)
    compute_gflops: float | None = None  # usable for prefill (CPU/GPU/NPU peak, FP16-ish)
    power_budget_w: float | None = None
    cores: int | None = None  # CPU cores (physical)
    threads_default: int | None = None  # threads an engine runs with there (None: cores)
    cpu_features: list[str] = Field(default_factory=list)
    accelerator: str | None = None
    notes: str = ""
    measured: bool = False  # True when probed on this machine rather than taken from a spec sheet
    extra: dict = Field(default_factory=dict)  # thermal, battery, load readings from a probe
    decode_calibration: DecodeCalibration | None = None  # measured with the engine, local only
    # the backend devices that hold the model (records/compute_device.py); none: one CPU pool
    compute_devices: list[ComputeDevice] = Field(default_factory=list)
    links: list[DeviceLink] = Field(default_factory=list)

    @model_validator(mode="after")
    def _parts(self) -> "DeviceProfile":
        names = [d.name for d in self.compute_devices]
        if len(set(names)) != len(names):
            raise ValueError("compute device names must be unique")
        if self.compute_devices and not any(d.kind == "cpu" for d in self.compute_devices):
            raise ValueError("compute_devices needs the CPU (llama.cpp keeps the input layer there)")
        for link in self.links:
            missing = [n for n in link.between if n not in names]
            if missing:
                raise ValueError(f"link names unknown compute device {missing[0]}")
        return self
