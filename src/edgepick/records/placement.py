"""Where each tensor of a model lives: llama.cpp's placement flags as data.

The fields are the engine's own: `-ngl` (`n_gpu_layers`), `-ot` (`tensor_overrides`,
`pattern=BUFFER`), `--n-cpu-moe`, `--tensor-split` and `--rpc`. `devices` names the non-CPU
backend devices in llama.cpp's order (`CUDA0`, `RPC0[127.0.0.1:50052]`...).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

ALL = "all"


class Placement(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # the last N of the n_layer + 1 layers (the output layer first), or "all"
    n_gpu_layers: int | str = 0
    tensor_overrides: list[str] = Field(default_factory=list)  # -ot "pattern=BUFFER", in order
    n_cpu_moe: int = Field(default=0, ge=0)  # the experts of the first N layers stay on the CPU
    tensor_split: list[float] = Field(default_factory=list)  # per device; empty: by free memory
    devices: list[str] = Field(default_factory=list)  # the non-CPU devices, llama.cpp's order
    rpc: list[str] = Field(default_factory=list)  # host:port of each rpc-server (--rpc)

    @field_validator("n_gpu_layers")
    @classmethod
    def _ngl(cls, v: int | str) -> int | str:
        if isinstance(v, str):
            if v != ALL:
                raise ValueError(f"n_gpu_layers: expected a number or 'all', got {v!r}")
        elif v < 0:
            raise ValueError(f"n_gpu_layers: expected 0 or more, got {v}")
        return v

    @field_validator("tensor_overrides")
    @classmethod
    def _overrides(cls, v: list[str]) -> list[str]:
        for o in v:
            if "=" not in o or not o.split("=", 1)[0] or not o.rsplit("=", 1)[1]:
                raise ValueError(f"tensor override {o!r}: expected PATTERN=BUFFER, e.g. "
                                 r"'blk\.\d+\.ffn_.*_exps=CPU'")
        return v

    def gpu_layers(self, n_layer: int) -> int:
        """The count llama.cpp uses: the output layer counts as one, 'all' is n_layer + 1."""
        return n_layer + 1 if self.n_gpu_layers == ALL else int(self.n_gpu_layers)

    def llama_args(self) -> list[str]:
        """The llama.cpp command-line flags that give this placement."""
        args = ["-ngl", str(self.n_gpu_layers)]
        if self.rpc:
            args += ["--rpc", ",".join(self.rpc)]
        if self.tensor_overrides:
            args += ["-ot", ",".join(self.tensor_overrides)]
        if self.n_cpu_moe:
            args += ["--n-cpu-moe", str(self.n_cpu_moe)]
        if self.tensor_split:
            args += ["-ts", ",".join(f"{x:g}" for x in self.tensor_split)]
        return args


class DeviceMemory(BaseModel):
    """One backend device's share of a placement, in the parts llama.cpp's
    `llama_memory_breakdown_print` reports (model, context = KV cache, compute buffer)."""

    name: str
    kind: str  # cpu, gpu, npu, rpc
    model_bytes: int
    context_bytes: int
    compute_bytes: int
    repacked_bytes: int = 0  # of model_bytes, in the CPU's repacked buffer (CPU_REPACK)
    # the CPU's mapped file range (mmap): from its first tensor to its last, others' between
    # included, which llama.cpp's breakdown counts as the host's model; pages never read stay
    # on disk
    mapped_bytes: int | None = None
    layers: list[int] = Field(default_factory=list)  # repeating layers it runs
    output: bool = False  # holds the output layer (the LM head)
    weights_by_layer: dict[str, int] = Field(default_factory=dict)  # input, 0.., output
    budget_bytes: int | None = None  # what the device leaves to the model, when known
    shared_with_host: bool = False  # its memory is the host's pool

    @computed_field
    @property
    def total_bytes(self) -> int:
        return self.model_bytes + self.context_bytes + self.compute_bytes


class PlacementPlan(BaseModel):
    """Memory per device for one exact placement, and what the host holds."""

    placement: Placement
    n_ctx: int
    devices: list[DeviceMemory]
    host_bytes: int  # the CPU's part plus every device that shares the host's memory
    host_budget_bytes: int | None = None
    repack: bool  # some CPU weights are still repacked (ggml-cpu/repack.cpp)
    fits: bool | None = None  # every device and the host within budget; None: no budget known
    llama_args: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    # decode bound per token (fit/placement_speed.py): each device's reads over its bandwidth
    # plus the crossings of each link; None when a device or link has no figure
    decode_tps_bound: float | None = None
    decode_tps_band: list[float] | None = None  # the seeds' 0.6-0.7 of it: not validated
    decode_seconds: dict[str, float] = Field(default_factory=dict)
    decode_unknown: list[str] = Field(default_factory=list)
