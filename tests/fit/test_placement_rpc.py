"""fit's memory per device against what llama.cpp allocates, with llama.cpp's rpc-server on
127.0.0.1 standing in for a second device: a dense model, a mixture of experts with its experts
on the CPU (-ot and --n-cpu-moe) and Gemma-3 (sliding-window attention), at several -ngl, on
shapes and settings the model was not fitted on. llama-server logs each buffer (two decimals);
its `memory_breakdown_print` table at exit is the same sums cut to whole MiB."""

from __future__ import annotations

import math

import pytest

from edgepick.assets import bundled
from edgepick.assets.synthetic import synthetic_llama
from edgepick.devices.catalog import load_device
from edgepick.fit.device_plan import plan_placement
from edgepick.fit.planner import plan_tensors
from edgepick.models.gguf_info import gguf_spec
from edgepick.records.placement import Placement
from llama_placement_log import rpc_endpoint as endpoint  # noqa: F401 (a fixture)
from llama_placement_log import server_allocations
from synthetic_moe import synthetic_qwen3moe

MIB = 2**20
EXPS = r"\.ffn_(up|down|gate)_exps=CPU"
# model, KV and compute within 3%; the compute buffers are replayed through ggml's scheduler
# and allocator (fit/alloc_replay.py) and agree to 0.01 MiB (docs/placement.md)
LIMIT = {"model": 0.03, "context": 0.03, "compute": 0.03}


def _dense():
    return synthetic_llama(n_embd=640, n_ff=2304, n_layers=5, n_head=10, n_head_kv=2)


def _moe():
    return synthetic_qwen3moe(n_embd=384, n_layers=3, n_head=6, n_head_kv=3, n_expert=4,
                              n_used=2, n_ff_exp=768)


CASES = [
    ("dense", _dense, ["-ngl", "2", "-c", "1500"]),
    ("dense", _dense, ["-ngl", "5", "-c", "1500"]),
    ("dense", _dense, ["-ngl", "all", "-c", "2600", "-fa", "off"]),
    ("moe", _moe, ["-ngl", "all", "-c", "1800", "-ot", EXPS]),
    ("moe", _moe, ["-ngl", "all", "-c", "1800", "--n-cpu-moe", "1"]),
    ("moe", _moe, ["-ngl", "3", "-c", "1800"]),
    ("iswa", bundled.gemma3_270m_f16, ["-ngl", "12", "-c", "3000"]),
    ("iswa", bundled.gemma3_270m_f16, ["-ngl", "all", "-c", "5000"]),
]


def _placement(args: list[str], device: str) -> tuple[Placement, int, bool]:
    flags = dict(zip(args[::2], args[1::2]))
    ngl = flags["-ngl"]
    return (Placement(n_gpu_layers=ngl if ngl == "all" else int(ngl), devices=[device],
                      tensor_overrides=[flags["-ot"]] if "-ot" in flags else [],
                      n_cpu_moe=int(flags.get("--n-cpu-moe", 0))),
            int(flags["-c"]), flags.get("-fa", "on") != "off")


@pytest.mark.parametrize("kind, model, args", CASES, ids=[f"{c[0]} {' '.join(c[2])}" for c in CASES])
def test_memory_per_device_is_what_llama_cpp_allocates(endpoint, kind, model, args):
    path = model()
    got = server_allocations(path, endpoint, args)
    spec = gguf_spec(str(path))
    tensors, _, _ = plan_tensors(spec, None)
    placement, n_ctx, fa = _placement(args, f"RPC0[{endpoint}]")
    # llama-server reserves one logits row per slot (-np 1)
    host = load_device("laptop-16gb-cpu")  # F16 files: nothing is repacked on any CPU
    plan = plan_placement(spec, tensors, n_ctx, placement, host, flash_attn=fa, n_outputs_max=1)
    misses = []
    for dev in plan.devices:
        row = "Host" if dev.name == "CPU" else "RPC0"
        model_bytes = dev.mapped_bytes if dev.mapped_bytes is not None else dev.model_bytes
        fit = {"model": model_bytes - dev.repacked_bytes, "context": dev.context_bytes,
               "compute": dev.compute_bytes}
        logged = got["buffers"].get(row, {})
        for part, limit in LIMIT.items():
            want = logged.get(part, 0.0) * MIB
            if abs(fit[part] - want) > max(limit * want, 0.02 * MIB):
                misses.append(f"{row} {part}: fit {fit[part] / MIB:.2f} MiB, llama.cpp "
                              f"{want / MIB:.2f} MiB ({(fit[part] - want) / want:+.1%})")
            # the breakdown table is the same sum, cut to whole MiB
            assert abs(got["table"][row][part] - math.floor(logged.get(part, 0.0))) <= 1
        if dev.repacked_bytes:
            assert got["buffers"]["CPU_REPACK"]["model"] * MIB == \
                pytest.approx(dev.repacked_bytes, rel=0.03)
    assert not misses, "; ".join(misses)
