"""Memory per backend device for one exact placement: what llama.cpp's
`llama_memory_breakdown_print` (common/fit.cpp) reports for the same file and settings, before
anything is loaded.

Weights and KV follow fit/placement.py (llama.cpp's placement rules); the compute buffer of
each backend is fit/device_compute.py's. The CPU row is the host's own buffers (`Host` in the
breakdown: the weights of CPU layers, their KV, the CPU compute buffer) with the repacked
weights (`CPU_REPACK`, a row of its own there) added in; a device that shares the host's memory
(a Jetson's or a Mac's GPU, a phone's) draws on the host's pool too, so `host_bytes` counts it.
"""

from __future__ import annotations

from collections import defaultdict

from edgepick.errors import EdgepickError
from edgepick.fit.compute import batches
from edgepick.fit.device_compute import backend_compute_bytes
from edgepick.fit.memory import kv_cells, kv_row_bytes
from edgepick.fit.placement import CPU, REPACK, layer_devices, place_tensors, tensor_layer
from edgepick.fit.placement_speed import placement_decode_bound
from edgepick.fit.planner import plan_tensors
from edgepick.models.quant_types import PlannedTensor
from edgepick.records.device import DeviceProfile
from edgepick.records.fit import FitEstimate
from edgepick.records.model import ModelSpec
from edgepick.records.placement import DeviceMemory, Placement, PlacementPlan


def device_parts(device: DeviceProfile, placement: Placement) -> dict[str, dict]:
    """name -> {kind, budget, shared} for the CPU and each device the placement names: from the
    profile's compute devices, else an RPC device per --rpc endpoint, budget unknown."""
    known = {d.name: d for d in device.compute_devices}
    out = {CPU: {"kind": "cpu", "budget": device.model_budget_bytes, "shared": True}}
    cpu = next((d for d in device.compute_devices if d.kind == "cpu"), None)
    if cpu is not None:
        out[CPU]["budget"] = cpu.usable_bytes
    for name in placement.devices:
        d = known.get(name)
        if d is not None:
            out[name] = {"kind": d.kind, "budget": d.usable_bytes,
                         "shared": d.memory == "shared"}
        elif name.startswith("RPC"):
            out[name] = {"kind": "rpc", "budget": None, "shared": False}
        else:
            raise EdgepickError(f"device {name!r} is not one of {device.name}'s compute devices "
                                f"({', '.join(known) or 'it lists none'})")
    return out


ALIGNMENT = 32  # GGUF's default general.alignment: each tensor's data starts on it


def mapped_span(tensors: list[PlannedTensor], homes) -> int:
    """The file range llama.cpp maps for the CPU's plain buffer (llama_model_loader::
    get_mapping_range: the first to the last byte of its tensors), tensors laid out in the
    order the file lists them, each padded to the alignment."""
    cpu = {h.tensor.name for h in homes if h.buffer == CPU}
    idx = [i for i, t in enumerate(tensors) if t.name in cpu]
    if not idx:
        return 0
    pad = lambda n: (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT  # noqa: E731
    return sum(pad(t.n_bytes) for t in tensors[idx[0]:idx[-1]]) + tensors[idx[-1]].n_bytes


def plan_placement(spec: ModelSpec, tensors: list[PlannedTensor], n_ctx: int,
                   placement: Placement, device: DeviceProfile, *, kv_type: str = "f16",
                   kv_type_v: str | None = None, flash_attn: bool = True, n_batch: int = 512,
                   n_ubatch: int = 512, swa_full: bool = False,
                   n_outputs_max: int | None = None,
                   free: dict[str, int] | None = None, mmap: bool = True,
                   fill: int | None = None) -> PlacementPlan:
    """`free`: each device's free memory as llama.cpp reads it, where known (it splits layers
    by it without a tensor_split, and it is then the device's budget)."""
    parts = device_parts(device, placement)
    for name, n in (free or {}).items():
        if name in parts and name != CPU:
            parts[name]["budget"] = n
    free = {n: p["budget"] or 0 for n, p in parts.items()}
    n_layer = spec.n_layers
    layers = layer_devices(n_layer, placement, free)
    homes = place_tensors(tensors, n_layer, placement, free, device.cpu_features)
    model: dict[str, int] = defaultdict(int)
    repacked: dict[str, int] = defaultdict(int)
    by_layer: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for h in homes:
        model[h.device] += h.tensor.n_bytes
        if h.buffer == REPACK:
            repacked[h.device] += h.tensor.n_bytes
        il = tensor_layer(h.tensor.name, n_layer)
        label = "input" if il < 0 and h.device == CPU and h.buffer == CPU else \
            "output" if il >= n_layer or il < 0 else str(il)
        by_layer[h.device][label] += h.tensor.n_bytes
    kv_spec = spec if not swa_full else spec.model_copy(update={"swa_layers": []})
    b = batches(n_ctx, n_batch, n_ubatch)
    cells = [kv_cells(kv_spec, i, n_ctx, b.n_ubatch) for i in range(n_layer)]
    context: dict[str, int] = defaultdict(int)
    for il in range(n_layer):
        context[layers[il]] += cells[il] * kv_row_bytes(kv_spec, il, kv_type, kv_type_v)
    compute = backend_compute_bytes(spec, homes, layers, cells, b, flash_attn, n_outputs_max)
    rows = []
    for name, p in parts.items():
        held = [il for il in range(n_layer) if layers[il] == name]
        rows.append(DeviceMemory(
            name=name, kind=p["kind"], model_bytes=model[name], context_bytes=context[name],
            compute_bytes=compute.get(name, 0), repacked_bytes=repacked[name], layers=held,
            output=layers[n_layer] == name, weights_by_layer=dict(by_layer[name]),
            budget_bytes=p["budget"], shared_with_host=p["shared"],
            mapped_bytes=mapped_span(tensors, homes) if name == CPU and mmap else None))
    host = sum(r.total_bytes for r in rows if r.shared_with_host)
    fits = None
    if all(r.budget_bytes for r in rows):
        pools_ok = all(r.total_bytes <= r.budget_bytes for r in rows if not r.shared_with_host)
        fits = pools_ok and host <= parts[CPU]["budget"]
    plan = PlacementPlan(placement=placement, n_ctx=n_ctx, devices=rows, host_bytes=host,
                         host_budget_bytes=parts[CPU]["budget"], repack=bool(repacked[CPU]),
                         fits=fits, llama_args=placement.llama_args() + ["-c", str(n_ctx)])
    speed = placement_decode_bound(kv_spec, homes, plan, device,
                                   n_ctx // 2 if fill is None else min(fill, n_ctx), kv_type,
                                   kv_type_v, b.n_ubatch)
    return plan.model_copy(update={"decode_tps_bound": speed["tps_bound"],
                                   "decode_tps_band": speed["tps_band"],
                                   "decode_seconds": speed["seconds"],
                                   "decode_unknown": speed["unknown"]})


def placement_verdict(plan: PlacementPlan, margin: float) -> str | None:
    """fits / tight / no over every dedicated device's own budget and the host's pool; None
    when a device's budget is unknown (an RPC device the profile does not describe)."""
    pools = [(r.total_bytes, r.budget_bytes) for r in plan.devices if not r.shared_with_host]
    pools.append((plan.host_bytes, plan.host_budget_bytes))
    if any(b is None for _, b in pools):
        return None
    if all(n * (1 + margin) <= b for n, b in pools):
        return "fits"
    return "tight" if all(n <= b for n, b in pools) else "no"


def placed_estimate(est: FitEstimate, spec: ModelSpec, quant: str | None, placement: Placement,
                    device: DeviceProfile, margin: float,
                    **settings) -> tuple[FitEstimate, PlacementPlan]:
    """`est` (one model, type and context on `device`) for `placement`: its per-device plan,
    and its verdict over each device's own pool and the host's where every budget is known
    (else the estimate's own). `settings` are plan_placement's."""
    tensors, _, _ = plan_tensors(spec, None if quant == "native" else quant)
    plan = plan_placement(spec, tensors, est.ctx, placement, device, **settings)
    return est.model_copy(update={"verdict": placement_verdict(plan, margin) or est.verdict}), plan
