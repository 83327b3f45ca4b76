"""Where each tensor of a model lives: llama.cpp's placement flags as data.

The fields are the engine's own: `-ngl` (`n_gpu_layers`), `-ot` (`tensor_overrides`,
`pattern=BUFFER`), `--n-cpu-moe`, `--tensor-split` and `--rpc`. `devices` names the non-CPU
backend devices in llama.cpp's order (`CUDA0`, `RPC0[127.0.0.1:50052]`...).

A plan's runtime gives the same fields flat, each value as llama.cpp's flag takes it (`-ot
A=CPU,B=CPU`, `-ts 3,1`, `--rpc h1:p,h2:p`): the `*_value` functions below read either form,
and `axis_value` writes one value of a plan's axis in that one-string form.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

ALL = "all"
# -ngl n_layer // 2: half of the model's layers, resolved per model from its GGUF's block count
# where a plan is read (`resolved`). llama.cpp counts the output layer as one of them, so it
# moves the output layer and the last n_layer // 2 - 1 blocks
HALF = "half"
# the runtime fields a plan may give (llama.cpp's names), gathered into `placement`
FIELDS = ("n_gpu_layers", "n_cpu_moe", "tensor_overrides", "tensor_split", "rpc")


def _items(v: Any, what: str) -> list:
    """llama.cpp's comma-separated form, or a list, as a list of items."""
    if isinstance(v, str):
        return [x.strip() for x in v.split(",") if x.strip()]
    if isinstance(v, (list, tuple)):
        return list(v)
    raise ValueError(f"{what}: expected a comma-separated string or a list, got {v!r}")


def gpu_layers_value(v: Any) -> int | str:
    """-ngl: a count of layers, `all` or `half`."""
    if isinstance(v, str) and v.strip().isdigit():
        v = int(v)
    if isinstance(v, str) and v in (ALL, HALF):
        return v
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"n_gpu_layers: expected a number of layers, 'all' or 'half', got {v!r}")
    if v < 0:
        raise ValueError(f"n_gpu_layers: expected 0 or more, got {v}")
    return v


def _checked(v: Any, what: str, problem) -> list[str]:
    """The items of `v`, each one's `problem` (None: fine) raised as one line."""
    out = [str(x) for x in _items(v, what)]
    for why in filter(None, map(problem, out)):
        raise ValueError(why)
    return out


EXAMPLE_OVERRIDE = r"blk\.\d+\.ffn_.*_exps=CPU"


def _override_problem(o: str) -> str | None:
    pattern, _, buffer = o.rpartition("=")
    if not pattern or not buffer:
        return f"tensor override {o!r}: expected PATTERN=BUFFER, e.g. '{EXAMPLE_OVERRIDE}'"
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"tensor override {o!r}: {exc}"
    return None


def overrides_value(v: Any) -> list[str]:
    """-ot: PATTERN=BUFFER entries in order, each pattern a regular expression."""
    return _checked(v, "tensor_overrides", _override_problem)


def split_value(v: Any) -> list[float]:
    """-ts: one proportion per device (`3,1`; llama.cpp also reads `3/1`)."""
    items = _items(v.replace("/", ",") if isinstance(v, str) else
                   [v] if isinstance(v, (int, float)) and not isinstance(v, bool) else v,
                   "tensor_split")
    try:
        out = [float(x) for x in items]
    except (TypeError, ValueError):
        raise ValueError(f"tensor_split: expected proportions like 3,1, got {v!r}") from None
    if any(x < 0 for x in out):
        raise ValueError(f"tensor_split: proportions are 0 or more, got {v!r}")
    return out


def _endpoint_problem(e: str) -> str | None:
    host, _, port = e.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return f"rpc {e!r}: expected HOST:PORT of an rpc-server, e.g. 127.0.0.1:50052"
    return None


def rpc_value(v: Any) -> list[str]:
    """--rpc: the HOST:PORT of each rpc-server."""
    return _checked(v, "rpc", _endpoint_problem)


READERS = {"n_gpu_layers": gpu_layers_value, "tensor_overrides": overrides_value,
           "tensor_split": split_value, "rpc": rpc_value}


def axis_value(field: str, v: Any) -> Any:
    """One value of a plan's axis over `field`, checked, in a hashable form a Placement reads
    back: a list-valued field as llama.cpp's comma-separated string."""
    read = READERS.get(field)
    if read is None:
        return v
    got = read(v)
    if isinstance(got, list):
        return ",".join(f"{x:g}" if isinstance(x, float) else x for x in got)
    return got


class Placement(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # the last N of the n_layer + 1 layers (the output layer first), "all", or "half" until
    # resolved for a model
    n_gpu_layers: int | str = 0
    tensor_overrides: list[str] = Field(default_factory=list)  # -ot "pattern=BUFFER", in order
    n_cpu_moe: int = Field(default=0, ge=0)  # the experts of the first N layers stay on the CPU
    tensor_split: list[float] = Field(default_factory=list)  # per device; empty: by free memory
    devices: list[str] = Field(default_factory=list)  # the non-CPU devices, llama.cpp's order
    rpc: list[str] = Field(default_factory=list)  # host:port of each rpc-server (--rpc)

    @field_validator("n_gpu_layers", "tensor_overrides", "tensor_split", "rpc", mode="before")
    @classmethod
    def _read(cls, v: Any, info) -> Any:
        return READERS[info.field_name](v)

    def gpu_layers(self, n_layer: int) -> int:
        """The count llama.cpp uses: the output layer counts as one, 'all' is n_layer + 1."""
        return int(self.resolved(n_layer).n_gpu_layers) if self.n_gpu_layers != ALL \
            else n_layer + 1

    def resolved(self, n_layer: int) -> "Placement":
        """`half` as the count it stands for in a model of `n_layer` repeating layers."""
        if self.n_gpu_layers != HALF:
            return self
        return self.model_copy(update={"n_gpu_layers": n_layer // 2})

    @property
    def on_cpu_only(self) -> bool:
        """Every tensor stays on the CPU: what an engine without devices runs anyway."""
        return self.n_gpu_layers == 0 and not (self.rpc or self.tensor_overrides
                                               or self.n_cpu_moe or self.tensor_split)

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
