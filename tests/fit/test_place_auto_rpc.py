"""`fit --place auto` against llama.cpp's own `llama-fit-params` on an rpc-server whose usable
memory is cut with --fit-target, both fitting from the same free memory (the one
llama-fit-params logs): the same -ngl for a dense model, within one layer for a mixture of
experts."""

from __future__ import annotations

import re
import subprocess

import pytest

from edgepick.assets.synthetic import synthetic_llama
from edgepick.devices.backend_devices import listed_devices
from edgepick.devices.catalog import load_device
from edgepick.fit.auto_place import auto_place
from edgepick.fit.device_plan import plan_placement
from edgepick.fit.planner import plan_tensors
from edgepick.models.gguf_info import gguf_spec
from edgepick.records.placement import Placement
from llama_placement_log import rpc_endpoint as endpoint  # noqa: F401 (a fixture)
from parts import need_tool
from synthetic_moe import synthetic_qwen3moe

MIB = 2**20
FREE = re.compile(r"vs\. (\d+) MiB of free device memory")


@pytest.mark.parametrize("model, ngl", [
    (lambda: synthetic_llama(n_embd=640, n_ff=2304, n_layers=5, n_head=10, n_head_kv=2), 3),
    (lambda: synthetic_qwen3moe(n_embd=384, n_layers=3, n_head=6, n_head_kv=3, n_expert=4,
                                n_used=2, n_ff_exp=768), 2),
], ids=["dense", "moe"])
def test_place_auto_chooses_what_llama_fit_params_chooses(endpoint, model, ngl):
    path = model()
    spec = gguf_spec(str(path))
    tensors, _, _ = plan_tensors(spec, None)
    name = f"RPC0[{endpoint}]"
    host = load_device("laptop-16gb-cpu")
    base = Placement(devices=[name], rpc=[endpoint])
    free = next(d["free_bytes"] for d in listed_devices([endpoint]) if d["description"] == endpoint)

    def used(n: int) -> int:
        moe = [rf"blk\.{i}\.ffn_(up|down|gate_up|gate)_(ch|)exps=CPU"
               for i in range(spec.n_layers + 2 - n, spec.n_layers)] if spec.n_experts else []
        p = base.model_copy(update={"n_gpu_layers": n, "tensor_overrides": moe})
        return plan_placement(spec, tensors, 2048, p, host, free={name: free}).devices[1].total_bytes

    # a margin that leaves room for `ngl` layers and not one more, half a step from either
    margin = free - (used(ngl) + used(ngl + 1)) // 2
    r = subprocess.run([need_tool("llama-fit-params"), "-m", str(path), "--rpc", endpoint,
                        "-c", "2048", "-t", "1", "--fit-target", str(margin // MIB), "-lv", "4"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    args = r.stdout.split()
    theirs_ngl = int(args[args.index("-ngl") + 1])
    theirs_ot = set(args[args.index("-ot") + 1].strip('"').split(",")) if "-ot" in args else set()
    seen_free = int(FREE.findall(r.stderr)[0]) * MIB  # what llama-fit-params read
    plan = auto_place(spec, tensors, 2048, host, base, {name: seen_free},
                      {name: margin // MIB * MIB})
    if not spec.n_experts:
        assert plan.placement.n_gpu_layers == theirs_ngl == ngl
        assert set(plan.placement.tensor_overrides) == theirs_ot
    else:
        # both fill the same dense-only layers; llama-fit-params may then fit part of one more
        # (common_fit_params' step 4, which --place auto does not take: docs/placement.md)
        assert plan.placement.n_gpu_layers == ngl and theirs_ngl in (ngl, ngl + 1)
        assert set(plan.placement.tensor_overrides) <= theirs_ot


PROJECTED = re.compile(r"projected to use (\d+) MiB")


@pytest.mark.parametrize("model", [
    lambda: synthetic_qwen3moe(n_embd=256, n_layers=4, n_head=4, n_head_kv=2, n_expert=8,
                               n_used=2, n_ff_exp=512),
    lambda: synthetic_llama(n_embd=512, n_ff=1536, n_layers=4, n_head=8, n_head_kv=4),
], ids=["moe", "dense"])
@pytest.mark.parametrize("ctx", [512, 2048])
def test_a_model_wholly_on_the_device_needs_what_llama_fit_params_projects(endpoint, model, ctx):
    """With llama-fit-params' 512 rows of logits, the output device's buffer is the LM head's:
    fit's total is the whole MiB llama-fit-params prints."""
    path = model()
    spec = gguf_spec(str(path))
    tensors, _, _ = plan_tensors(spec, None)
    name = f"RPC0[{endpoint}]"
    r = subprocess.run([need_tool("llama-fit-params"), "-m", str(path), "--rpc", endpoint,
                        "-c", str(ctx), "-t", "1", "-lv", "4"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = int(PROJECTED.findall(r.stderr)[0])
    p = Placement(devices=[name], rpc=[endpoint], n_gpu_layers="all")
    ours = plan_placement(spec, tensors, ctx, p, load_device("laptop-16gb-cpu"),
                          free={name: 2**40}).devices[1].total_bytes
    assert ours // MIB == theirs, (ours / MIB, theirs)
