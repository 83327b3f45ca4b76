r"""Which backend device holds each tensor and each layer's KV cache, by llama.cpp's rules.

Read from the pinned llama.cpp (src/llama-model.cpp, `llama_model_base::load_tensors`):
- `-ngl N` moves the last N of the `n_layer + 1` layers (the repeating layers, then the output
  layer): `i_gpu_start = max(n_layer + 1 - N, 0)`, so the output layer goes first and `-ngl 4`
  moves it with the last three repeating layers ("offloading output layer to GPU", then
  "offloading 3 repeating layers"); "all" is n_layer + 1;
- the offloaded layers are spread over the devices by `tensor_split` (or, without one, by each
  device's free memory): layer `il` goes to the first device whose cumulative share exceeds
  `(il - i_gpu_start) / N` (`std::upper_bound` over the normalised splits);
- the input layer (`token_embd`, `position_embd`, `token_types`) always stays on the CPU ("there
  is very little benefit to offloading the input layer");
- a tensor override (`-ot PATTERN=BUFFER`, then `--n-cpu-moe`'s `blk\.i\.ffn_(up|down|gate|gate_up)_(ch|)exps`
  for the first N layers) is tried in order before the layer's device; the first pattern found
  anywhere in the name (`std::regex_search`) wins (src/llama-model-loader.cpp, `create_tensor`);
- an override to `CPU` and every CPU layer may still land in `CPU_REPACK` (ggml-cpu/repack.cpp);
- a tied embedding (no `output.weight`) is created again for the output layer
  (`TENSOR_DUPLICATED`) unless the output's buffer is the input's own `CPU` buffer;
- each layer's KV cache lives on that layer's device (src/llama-kv-cache.cpp: `model.dev_layer(il)`
  with the default `offload_kqv`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple

from edgepick.errors import EdgepickError
from edgepick.fit.overhead import repacked_tensors
from edgepick.models.quant_types import PlannedTensor
from edgepick.records.device import DeviceProfile
from edgepick.records.placement import Placement

CPU = "CPU"
REPACK = "CPU_REPACK"
INPUT_TENSORS = ("token_embd.", "position_embd.", "token_types.")
FFN_EXPS = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"  # common.h LLM_FFN_EXPS_REGEX
_BLOCK = re.compile(r"^blk\.(\d+)\.")


def rpc_name(index: int, endpoint: str) -> str:
    """llama.cpp's buffer name of the rpc-server at `endpoint` (ggml-rpc.cpp: RPC<dev>[endpoint]),
    the name -ot takes."""
    return f"RPC{index}[{endpoint}]" if ":" in endpoint else endpoint


def with_devices(placement: Placement, device: DeviceProfile) -> Placement:
    """`placement` with the devices it offloads to named, when it names none: the --rpc
    endpoints first (llama.cpp lists RPC devices first), then the profile's own GPUs and NPUs."""
    if placement.devices:
        return placement
    names = [rpc_name(0, e) for e in placement.rpc]
    names += [d.name for d in device.compute_devices if d.kind != "cpu" and d.name not in names]
    return placement.model_copy(update={"devices": names})


class TensorHome(NamedTuple):
    tensor: PlannedTensor
    device: str  # CPU or a device name
    buffer: str  # CPU, CPU_REPACK or the device name


def layer_devices(n_layer: int, placement: Placement, free: dict[str, int]) -> list[str]:
    """The device of layers 0..n_layer-1 and, last, of the output layer."""
    devices = placement.devices
    ngl = placement.gpu_layers(n_layer)
    i_start = max(n_layer + 1 - ngl, 0)
    act = min(ngl, n_layer + 1) if devices else 0
    split = list(placement.tensor_split[:len(devices)])
    if not any(split):
        split = [float(free.get(d, 0)) for d in devices]
    total = sum(split) or 1.0
    cum, acc = [], 0.0
    for s in split:
        acc += s
        cum.append(acc / total)
    out = []
    for il in range(n_layer + 1):
        if il < i_start or il - i_start >= act:
            out.append(CPU)
        else:
            idx = min(bisect_right(cum, (il - i_start) / act), len(devices) - 1)
            out.append(devices[idx])
    return out


def overrides(placement: Placement) -> list[tuple[re.Pattern, str]]:
    """-ot entries in order, then --n-cpu-moe's (llm_add_n_cpu_ffn_overrides)."""
    known = {CPU, *placement.devices}
    out = []
    for entry in placement.tensor_overrides:
        pattern, buffer = entry.rsplit("=", 1)
        if buffer not in known:
            raise EdgepickError(f"tensor override {entry!r}: unknown buffer type {buffer!r} "
                                f"(known: {', '.join(sorted(known))})")
        try:
            out.append((re.compile(pattern), buffer))
        except re.error as exc:
            raise EdgepickError(f"tensor override {entry!r}: {exc}") from None
    out += [(re.compile(rf"blk\.{i}{FFN_EXPS}"), CPU) for i in range(placement.n_cpu_moe)]
    return out


def tensor_layer(name: str, n_layer: int) -> int:
    """The layer index a tensor is created in: its block, n_layer for the output layer, -1 for
    the input layer."""
    m = _BLOCK.match(name)
    if m:
        return int(m.group(1))
    if name.startswith(INPUT_TENSORS):
        return -1
    if name.startswith("token_embd_norm"):
        return 0  # llama-arch.cpp: "do the norms on the first layer"
    return n_layer


def place_tensors(tensors: list[PlannedTensor], n_layer: int, placement: Placement,
                  free: dict[str, int], cpu_features) -> list[TensorHome]:
    """Every tensor with its device and buffer; a tied embedding appears twice when the output
    layer gets its own copy."""
    layers = layer_devices(n_layer, placement, free)
    rules = overrides(placement)
    repackable = {t.name for t in repacked_tensors(tensors, cpu_features)}
    tied = "output.weight" not in {t.name for t in tensors}
    out = []
    for t in tensors:
        il = tensor_layer(t.name, n_layer)
        device = CPU if il < 0 else layers[il]
        device = next((buf for pat, buf in rules if pat.search(t.name)), device)
        mul_mat = t.name != "token_embd.weight" and len(t.shape) >= 2
        buffer = REPACK if device == CPU and mul_mat and t.name in repackable else device
        out.append(TensorHome(t, device, buffer))
        if tied and t.name == "token_embd.weight":
            out_dev = next((buf for pat, buf in rules if pat.search("output.weight")), layers[-1])
            out_buf = REPACK if out_dev == CPU and t.name in repackable else out_dev
            if out_buf != CPU:  # the CPU buffer already holds it: no second copy
                out.append(TensorHome(t, out_dev, out_buf))
    return out
