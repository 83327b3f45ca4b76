"""The decode bound of a placement: per token, the bytes each device reads over its own
bandwidth, plus the activations that cross each link between devices.

One decoded token walks the layers in order; each device streams the weights it holds (of the
routed experts only the share a token uses, fit/speed.py) and the KV it caches up to the fill,
at its bandwidth. Every change of device on the way copies the hidden state (`n_embd` F32 values)
over the link between them, and the logits (`n_vocab` F32 values) come back to the host from
the output layer's device; a crossing costs its bytes over the link's bandwidth plus its latency.
Devices run one after the other (llama.cpp's layer split is a pipeline, idle for one sequence),
so the times add up. This is a bound: nothing here was measured on the devices themselves, so
the band around it is the seeds' 0.6-0.7 efficiency, not a validated one.
"""

from __future__ import annotations

from edgepick.fit.memory import kv_cells, kv_row_bytes
from edgepick.fit.placement import CPU, TensorHome
from edgepick.fit.speed import weights_read_per_token
from edgepick.records.device import DeviceProfile
from edgepick.records.model import ModelSpec
from edgepick.records.placement import PlacementPlan

F32 = 4
SEED_EFFICIENCY = (0.6, 0.7)  # seed 001 §3.1: sustained decode reaches 60-70% of the bound


def _link(device: DeviceProfile, a: str, b: str):
    return next((lk for lk in device.links if set(lk.between) == {a, b}), None)


def placement_decode_bound(spec: ModelSpec, homes: list[TensorHome], plan: PlacementPlan,
                           device: DeviceProfile, fill: int, kv_type: str = "f16",
                           kv_type_v: str | None = None, n_ubatch: int = 512) -> dict:
    """{"tps_bound", "tps_band", "seconds": {part: s}, "unknown": [what has no figure]}."""
    bandwidth = {d.name: d.bandwidth_gbps for d in device.compute_devices}
    bandwidth.setdefault(CPU, device.bandwidth_gbps)
    read: dict[str, int] = {}
    names = {h.tensor.name: h.device for h in homes if h.buffer != CPU or h.device == CPU}
    tensors = [h.tensor for h in homes]
    for t in weights_read_per_token(tensors, spec.n_experts, spec.n_experts_used):
        dev = names.get(t.name, CPU)
        read[dev] = read.get(dev, 0) + t.n_bytes
    layer_dev = {il: d.name for d in plan.devices for il in d.layers}
    for il in range(spec.n_layers):
        dev = layer_dev.get(il, CPU)
        cells = min(fill, kv_cells(spec, il, plan.n_ctx, n_ubatch))
        read[dev] = read.get(dev, 0) + cells * kv_row_bytes(spec, il, kv_type, kv_type_v)
    seconds: dict[str, float] = {}
    unknown: list[str] = []
    for dev, n in read.items():
        bw = bandwidth.get(dev)
        if bw is None:
            unknown.append(f"{dev}: no bandwidth in the profile")
            continue
        seconds[f"{dev} reads"] = n / (bw * 1e9)
    path = [CPU] + [layer_dev.get(il, CPU) for il in range(spec.n_layers)]
    path.append(next((d.name for d in plan.devices if d.output), CPU))
    hops = [(a, b, F32 * spec.n_embd) for a, b in zip(path, path[1:]) if a != b]
    if path[-1] != CPU:
        hops.append((path[-1], CPU, F32 * spec.vocab_size))  # the logits come home
    for a, b, n in hops:
        link = _link(device, a, b)
        if link is None:
            unknown.append(f"{a}-{b}: no link in the profile")
            continue
        key = f"{a}->{b} ({link.kind})"
        seconds[key] = seconds.get(key, 0.0) + n / (link.bandwidth_gbps * 1e9) \
            + link.latency_us * 1e-6
    total = sum(seconds.values())
    bound = 1.0 / total if total and not unknown else None
    band = [round(bound * e, 2) for e in SEED_EFFICIENCY] if bound else None
    return {"tps_bound": round(bound, 2) if bound else None, "tps_band": band,
            "seconds": {k: round(v, 9) for k, v in seconds.items()}, "unknown": unknown}
