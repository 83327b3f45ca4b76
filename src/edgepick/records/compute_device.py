"""The parts of a device that hold and run a model: compute devices with their own memory, and the
links between them (seed 001 §2.3: the device decides the model scale; seed 003 §4.1: the engine is
chosen by the hardware, CPU, GPU or NPU).

A device profile without parts is one CPU with one memory pool (its top-level figures). With
parts, each compute device is one of llama.cpp's backend devices (`ggml_backend_dev_*`): the CPU
that always holds the input embedding, a GPU, an NPU, or an `RPC` device (another machine running
llama.cpp's rpc-server, whose memory is its own). A `shared` memory is the host's own pool seen
by the accelerator (Jetson, Apple M-series, a phone's GPU): what the accelerator holds comes out
of the same RAM as the host's part.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

KINDS = ("cpu", "gpu", "npu", "rpc")
LINK_KINDS = ("pcie", "unified", "network")


class ComputeDevice(BaseModel):
    """One backend device. `name` is what llama.cpp calls it (`CPU`, `CUDA0`, `Vulkan0`, `MTL0`,
    `RPC0[host:port]`); `budget_bytes` is what it leaves to the model (its memory less the
    driver's and the display's share), by default all of it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: Literal["cpu", "gpu", "npu", "rpc"]
    memory: Literal["dedicated", "shared"] = "dedicated"
    memory_bytes: int = Field(gt=0)
    budget_bytes: int | None = Field(default=None, gt=0)
    bandwidth_gbps: float = Field(gt=0)  # sustained read bandwidth of its memory, GB/s
    compute_gflops: float | None = Field(default=None, gt=0)
    backend: str | None = None  # ggml backend that drives it: CPU, CUDA, Vulkan, Metal, RPC...
    endpoint: str | None = None  # host:port of an RPC device
    description: str = ""

    @property
    def usable_bytes(self) -> int:
        return self.budget_bytes if self.budget_bytes is not None else self.memory_bytes

    @model_validator(mode="after")
    def _endpoint(self) -> "ComputeDevice":
        if self.kind == "rpc" and not self.endpoint:
            raise ValueError(f"{self.name}: an RPC device needs its endpoint (host:port)")
        if self.budget_bytes is not None and self.budget_bytes > self.memory_bytes:
            raise ValueError(f"{self.name}: budget_bytes above memory_bytes")
        return self


class DeviceLink(BaseModel):
    """What activations cross between two compute devices: a PCIe slot, one unified memory (no
    copy at all), or a network (an RPC device)."""

    model_config = ConfigDict(extra="forbid")

    between: tuple[str, str]
    kind: Literal["pcie", "unified", "network"]
    bandwidth_gbps: float = Field(gt=0)  # GB/s one way
    latency_us: float = Field(default=0.0, ge=0)  # per crossing (one round trip on a network)
