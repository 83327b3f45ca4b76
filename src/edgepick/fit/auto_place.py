r"""`fit --place auto`: a placement chosen the way llama.cpp's `common_fit_params` chooses one
(common/fit.cpp, what `--fit` and `llama-fit-params` run), from fit's own per-device prediction
instead of a trial load per step, and checked against the host's memory as well.

llama.cpp's steps, for a context the user set (the only case here: `-c` is always given):
- with every layer on the devices (`-ngl` unset), each device keeps `free - margin` (the margin
  is `--fit-target`, 1024 MiB by default): nothing changes;
- otherwise the devices are filled back to front, the last device first: each takes the most of
  the still unassigned `n_layer + 1` layers (the output layer counting as one) whose memory stays
  within its target; the result is `-ngl` = their sum and, with several devices, `-ts` = each
  device's count;
- for a mixture of experts, every layer a device takes is "dense only" first: its routed expert
  tensors stay on the CPU (`-ot blk\.i\.ffn_(up|down|gate_up|gate)_(ch|)exps=CPU`), except the
  first layer of the last device's share.
What is not reproduced: when the dense-only layers leave room, llama.cpp then turns them back
into full layers front to back and tries to fit part of one more (its step 4); `--place auto`
stops before that and says so. `common_fit_params` assumes unlimited host memory (common/fit.h);
here the host's part (the CPU's buffers, and a device that shares the host's memory) must fit the
host's budget too, or the plan says it does not.
"""

from __future__ import annotations

from typing import Callable

from edgepick.fit.device_plan import plan_placement
from edgepick.models.quant_types import PlannedTensor
from edgepick.records.device import DeviceProfile
from edgepick.records.model import ModelSpec
from edgepick.records.placement import ALL, Placement, PlacementPlan

MIB = 2**20
DEFAULT_MARGIN_BYTES = 1024 * MIB  # common.h: fit_params_target
MOE_PATTERN = r"blk\.{}\.ffn_(up|down|gate_up|gate)_(ch|)exps=CPU"  # LAYER_FRACTION_MOE
STEP4_NOTE = ("llama.cpp would next turn dense-only layers back into full layers while the "
              "devices have room (common_fit_params step 4); --place auto keeps the experts of "
              "the offloaded layers on the CPU")


def _placement(base: Placement, per_device: list[tuple[int, int]], n_layer: int) -> Placement:
    """llama.cpp's set_ngl_tensor_split_tbo: (n_layer, n_part) per device -> the flags."""
    ngl = sum(n for n, _ in per_device)
    overrides = []
    il0 = n_layer + 1 - ngl
    for n, part in per_device:
        il0 += n - part
        overrides += [MOE_PATTERN.format(il) for il in range(il0, il0 + part)]
        il0 += part
    split = [float(n) for n, _ in per_device] if len(per_device) > 1 else []
    return base.model_copy(update={"n_gpu_layers": ngl, "tensor_split": split,
                                   "tensor_overrides": overrides})


def auto_place(spec: ModelSpec, tensors: list[PlannedTensor], n_ctx: int, device: DeviceProfile,
               base: Placement, free: dict[str, int], margins: dict[str, int] | None = None,
               **settings) -> PlacementPlan:
    """`base` names the devices (and --rpc endpoints); `free` is each device's free memory as
    llama.cpp reads it (ggml_backend_dev_memory) or the profile's budget."""
    devices = base.devices
    margins = margins or {}
    n_layer = spec.n_layers
    moe = spec.n_experts > 0

    def plan(p: Placement) -> PlacementPlan:
        return plan_placement(spec, tensors, n_ctx, p, device, free=free, **settings)

    def used(p: PlacementPlan, name: str) -> int:
        return next(d.total_bytes for d in p.devices if d.name == name)

    target = {d: free[d] - margins.get(d, DEFAULT_MARGIN_BYTES) for d in devices}
    full = plan(base.model_copy(update={"n_gpu_layers": ALL}))
    if all(used(full, d) <= target[d] for d in devices):
        return _with_host_note(full, [])
    per_device = [(0, 0)] * len(devices)
    fits: Callable[[list[tuple[int, int]], int], bool] = \
        lambda pd, i: used(plan(_placement(base, pd, n_layer)), devices[i]) <= target[devices[i]]
    for i in range(len(devices) - 1, -1, -1):
        unassigned = n_layer + 1 - sum(n for n, _ in per_device[i + 1:])
        best = per_device[i]
        for n in range(unassigned, 0, -1):  # the most layers that still fit
            part = (n if i < len(devices) - 1 else n - 1) if moe else 0
            trial = per_device[:i] + [(n, part)] + per_device[i + 1:]
            if fits(trial, i):
                best = (n, part)
                break
        per_device[i] = best
    chosen = plan(_placement(base, per_device, n_layer))
    notes = [STEP4_NOTE] if moe and any(p for _, p in per_device) else []
    return _with_host_note(chosen, notes)


def _with_host_note(p: PlacementPlan, notes: list[str]) -> PlacementPlan:
    if p.host_budget_bytes is not None and p.host_bytes > p.host_budget_bytes:
        notes = notes + [f"the host's part ({p.host_bytes / MIB:.0f} MiB) exceeds its budget "
                         f"({p.host_budget_bytes / MIB:.0f} MiB): llama.cpp's fit assumes "
                         "unlimited host memory and would place it anyway"]
    return p.model_copy(update={"notes": p.notes + notes})
