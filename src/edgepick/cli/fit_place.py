"""`edgepick fit`'s placement options: where each tensor goes (-ngl, -ot, --n-cpu-moe, -ts,
--rpc) and the per-device memory table."""

from __future__ import annotations

from rich import box
from rich.table import Table

from edgepick.cli.output import console
from edgepick.devices.backend_devices import listed_devices
from edgepick.errors import EdgepickError
from edgepick.fit.auto_place import auto_place
from edgepick.fit.device_plan import placed_estimate
from edgepick.fit.placement import rpc_name, with_devices
from edgepick.fit.planner import plan_tensors
from edgepick.models.spec import ref_spec
from edgepick.records.device import DeviceProfile
from edgepick.records.placement import ALL, Placement


def placement_from_options(device: DeviceProfile, ngl: str | None, overrides: list[str],
                           n_cpu_moe: int, tensor_split: str | None,
                           rpc: list[str]) -> Placement | None:
    """None when no placement option is given (the model on the CPU, as before). The devices
    are the --rpc endpoints (llama.cpp puts RPC devices first), then the profile's own GPUs and
    NPUs."""
    if ngl is None and not overrides and not n_cpu_moe and not tensor_split and not rpc:
        return None
    endpoints = [e for item in rpc for e in item.split(",") if e]
    for e in endpoints:
        if ":" not in e:
            raise EdgepickError(f"--rpc {e}: expected HOST:PORT of an rpc-server")
    if ngl is not None and ngl != ALL and not ngl.isdigit():
        raise EdgepickError(f"--ngl: expected a number of layers or 'all', got {ngl!r}")
    split: list[float] = []
    if tensor_split:
        try:
            split = [float(x) for x in tensor_split.replace("/", ",").split(",")]
        except ValueError:
            raise EdgepickError(f"--tensor-split: expected proportions like 3,1, got "
                                f"{tensor_split!r}") from None
    kw = {"tensor_overrides": [o for item in overrides for o in item.split(",") if o],
          "n_cpu_moe": n_cpu_moe, "tensor_split": split, "rpc": endpoints}
    if ngl is not None:
        kw["n_gpu_layers"] = ngl if ngl == ALL else int(ngl)
    try:
        return with_devices(Placement(**kw), device)
    except ValueError as exc:
        raise EdgepickError(str(exc).splitlines()[-1]) from None


def place_rows(rows, refs, quants: list[str], ctxs: list[int], dev: DeviceProfile,
               placement: Placement, settings: dict, margin: float):
    """Each estimate's per-device plan (rows come model by model, type by type, context by
    context, as fit's stage makes them), and its verdict over the devices' own pools."""
    combos = [(ref, q) for ref in refs for q in quants for _ in ctxs]
    placed = [placed_estimate(row, ref_spec(ref), quant, placement, dev, margin, **settings)
              for (ref, quant), row in zip(combos, rows)]
    return [r for r, _ in placed], [p for _, p in placed]


def print_plans(rows, names: list[str], plans) -> None:
    """One table per estimate: each device's model, context (KV) and compute buffer, in MiB."""
    mib = lambda n: f"{n / 2**20:.1f}"  # noqa: E731
    for name, r, plan in zip(names, rows, plans):
        t = Table(title=f"{name} {r.quant} ctx {r.ctx}: memory per device, MiB "
                        f"({' '.join(plan.llama_args)})", box=box.SIMPLE_HEAD)
        for col in ("device", "layers", "model", "context", "compute", "total", "budget"):
            t.add_column(col, justify="left" if col in ("device", "layers") else "right")
        for d in plan.devices:
            held = (f"{d.layers[0]}-{d.layers[-1]}" if len(d.layers) > 1 else
                    str(d.layers[0]) if d.layers else "-") + (" +out" if d.output else "")
            t.add_row(d.name, held, mib(d.model_bytes), mib(d.context_bytes),
                      mib(d.compute_bytes), mib(d.total_bytes),
                      mib(d.budget_bytes) if d.budget_bytes else "?")
        console.print(t)
        host = (f"host memory {mib(plan.host_bytes)} MiB"
                + (f" of {mib(plan.host_budget_bytes)}" if plan.host_budget_bytes else "")
                + ("; CPU weights still repacked (CPU_REPACK)" if plan.repack else ""))
        console.print(f"[dim]{host}; verdict {r.verdict}[/]")
        if plan.decode_tps_bound:
            lo, hi = plan.decode_tps_band
            console.print(f"[dim]decode bound {plan.decode_tps_bound:.0f} tok/s: each device's "
                          f"reads over its bandwidth plus each link's crossings; {lo:.0f}-{hi:.0f} "
                          "at the seeds' 0.6-0.7 efficiency (not measured here)[/]")
        else:
            console.print(f"[dim]no decode bound: {'; '.join(plan.decode_unknown)}[/]")
        for note in plan.notes:
            console.print(f"[dim]{note}[/]")


def fit_targets(value: str | None, devices: list[str]) -> dict[str, int]:
    """--fit-target MiB[,MiB...] as llama.cpp reads it: one value for every device, or one each."""
    if not value:
        return {}
    try:
        mib = [int(x) for x in value.replace("/", ",").split(",")]
    except ValueError:
        raise EdgepickError(f"--fit-target: expected MiB per device like 1024 or 512,2048, got "
                            f"{value!r}") from None
    if len(mib) == 1:
        mib = mib * len(devices)
    if len(mib) != len(devices):
        raise EdgepickError(f"--fit-target: {len(mib)} values for {len(devices)} devices")
    return {d: m * 2**20 for d, m in zip(devices, mib)}


def auto_placement(ref, quant: str | None, ctx: int, dev: DeviceProfile, base: Placement,
                   fit_target: str | None, settings: dict) -> Placement:
    """--place auto: llama.cpp's fit (fit/auto_place.py) on the devices `base` names, with each
    RPC device's free memory read from the pinned llama.cpp (`--list-devices`)."""
    if not base.devices:
        raise EdgepickError(f"--place auto: {dev.name} has no device beside the CPU; name an "
                            "rpc-server with --rpc or use a profile with compute_devices")
    free = {d.name: d.usable_bytes for d in dev.compute_devices}
    if base.rpc:
        listed = listed_devices(base.rpc)  # an RPC device is RPCn, described by its endpoint
        for endpoint in base.rpc:
            row = next((d for d in listed if d["name"].startswith("RPC")
                        and d["description"] == endpoint), None)
            if row is None:
                raise EdgepickError(f"--place auto: llama.cpp lists no device at {endpoint}")
            free[rpc_name(0, endpoint)] = row["free_bytes"]
    spec = ref_spec(ref)
    tensors, _, _ = plan_tensors(spec, quant)
    plan = auto_place(spec, tensors, ctx, dev, base, free,
                      fit_targets(fit_target, base.devices), **settings)
    for note in plan.notes:
        console.print(f"[dim]{note}[/]")
    return plan.placement
