"""Placement by llama.cpp's rules (fit/placement.py), the per-device plan on catalog devices
with several memories, and `fit --json`/`--place auto` on them; no engine runs here."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from edgepick.cli.app import app
from edgepick.devices.catalog import load_device
from edgepick.errors import EdgepickError
from edgepick.fit.device_plan import plan_placement
from edgepick.fit.placement import CPU, REPACK, layer_devices, place_tensors
from edgepick.models.quant_types import PlannedTensor
from edgepick.records.placement import Placement

MIB = 2**20


def test_ngl_moves_the_output_layer_first_then_the_last_repeating_layers():
    # llama-model.cpp: i_gpu_start = max(n_layer + 1 - ngl, 0)
    assert layer_devices(6, Placement(n_gpu_layers=1, devices=["G"]), {"G": 1}) == [CPU] * 6 + ["G"]
    assert layer_devices(6, Placement(n_gpu_layers=4, devices=["G"]), {"G": 1}) == \
        [CPU] * 3 + ["G"] * 4
    assert layer_devices(6, Placement(n_gpu_layers="all", devices=["G"]), {"G": 1}) == ["G"] * 7
    assert layer_devices(6, Placement(n_gpu_layers=99, devices=["G"]), {"G": 1}) == ["G"] * 7
    assert layer_devices(6, Placement(n_gpu_layers=4), {}) == [CPU] * 7  # no device: all CPU


def test_tensor_split_and_free_memory_spread_the_offloaded_layers():
    # std::upper_bound over the cumulative shares of (il - i_gpu_start) / ngl
    two = Placement(n_gpu_layers="all", devices=["A", "B"], tensor_split=[3, 1])
    assert layer_devices(7, two, {}) == ["A"] * 6 + ["B"] * 2
    by_free = Placement(n_gpu_layers="all", devices=["A", "B"])
    assert layer_devices(7, by_free, {"A": 1, "B": 1}) == ["A"] * 4 + ["B"] * 4


def _tensors(n_layer: int, tied: bool = False, moe: bool = False) -> list[PlannedTensor]:
    out = [PlannedTensor("token_embd.weight", [64, 1000], "Q4_0", 36000)]
    for i in range(n_layer):
        out.append(PlannedTensor(f"blk.{i}.attn_q.weight", [64, 64], "F16", 8192))
        ffn = "ffn_up_exps" if moe else "ffn_up"
        out.append(PlannedTensor(f"blk.{i}.{ffn}.weight", [64, 128] + ([4] if moe else []),
                                 "F16", 16384 * (4 if moe else 1)))
    out.append(PlannedTensor("output_norm.weight", [64], "F32", 256))
    if not tied:
        out.append(PlannedTensor("output.weight", [64, 1000], "Q4_0", 36000))
    return out


def test_overrides_win_in_order_and_n_cpu_moe_keeps_the_first_experts():
    p = Placement(n_gpu_layers="all", devices=["G"], n_cpu_moe=1,
                  tensor_overrides=[r"blk\.2\.ffn_up_exps=CPU"])
    homes = {(h.tensor.name, h.buffer) for h in place_tensors(_tensors(3, moe=True), 3, p,
                                                               {"G": 1}, ["avx2"])}
    assert ("blk.0.ffn_up_exps.weight", CPU) in homes
    assert ("blk.1.ffn_up_exps.weight", "G") in homes
    assert ("blk.2.ffn_up_exps.weight", CPU) in homes
    assert ("token_embd.weight", CPU) in homes  # the input layer never leaves the CPU
    assert ("output.weight", "G") in homes
    with pytest.raises(EdgepickError, match="unknown buffer type 'CUDA9'"):
        place_tensors(_tensors(1), 1, Placement(tensor_overrides=["x=CUDA9"]), {}, [])


def test_a_tied_embedding_is_copied_to_the_output_device_and_repacked_on_the_cpu():
    on_gpu = place_tensors(_tensors(2, tied=True), 2, Placement(n_gpu_layers=1, devices=["G"]),
                           {"G": 1}, ["avx2"])
    assert [(h.device, h.buffer) for h in on_gpu if h.tensor.name == "token_embd.weight"] == \
        [(CPU, CPU), ("G", "G")]
    on_cpu = place_tensors(_tensors(2, tied=True), 2, Placement(), {}, ["avx2"])
    assert [h.buffer for h in on_cpu if h.tensor.name == "token_embd.weight"] == [CPU, REPACK]
    no_repack = place_tensors(_tensors(2, tied=True), 2, Placement(), {}, [])
    assert [h.buffer for h in no_repack if h.tensor.name == "token_embd.weight"] == [CPU]


def test_a_shared_memory_counts_the_gpu_part_against_the_host():
    from edgepick.models.gguf_info import gguf_spec
    from edgepick.assets import bundled
    from edgepick.fit.planner import plan_tensors

    spec = gguf_spec(str(bundled.smollm2_f16()))
    tensors, _, _ = plan_tensors(spec, None)
    jetson = plan_placement(spec, tensors, 2048, Placement(n_gpu_layers="all",
                                                           devices=["CUDA0"]),
                            load_device("jetson-orin-nano"))
    assert jetson.host_bytes == sum(d.total_bytes for d in jetson.devices)
    laptop = plan_placement(spec, tensors, 2048, Placement(n_gpu_layers="all",
                                                           devices=["CUDA0"]),
                            load_device("laptop-8gb-gpu"))
    cpu, gpu = laptop.devices
    assert laptop.host_bytes == cpu.total_bytes and gpu.layers == list(range(spec.n_layers))
    assert gpu.output and gpu.weights_by_layer["output"] > 0  # the tied embedding's copy
    assert not laptop.repack  # SmolLM2 F16: nothing repacked on the CPU


def test_fit_json_gives_the_per_device_plan_on_a_catalog_gpu_laptop():
    r = CliRunner().invoke(app, ["fit", "--model", "smollm2", "--device", "laptop-8gb-gpu",
                                 "--ngl", "20", "--ctx", "4096", "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)[0]["placement_plan"]
    cpu, gpu = plan["devices"]
    assert (cpu["name"], gpu["name"]) == ("CPU", "CUDA0")
    assert cpu["layers"] == list(range(11)) and gpu["layers"] == list(range(11, 30))
    assert gpu["output"] and gpu["context_bytes"] > cpu["context_bytes"] > 0
    assert plan["llama_args"] == ["-ngl", "20", "-c", "4096"]


def test_place_auto_fills_the_gpu_to_its_target_and_says_what_it_chose():
    args = ["fit", "--model", "smollm2", "--device", "laptop-8gb-gpu", "--place", "auto",
            "--ctx", "2048", "--slots", "1", "--json"]
    free = CliRunner().invoke(app, args)
    assert free.exit_code == 0, free.output
    assert json.loads(free.stdout)[0]["placement_plan"]["placement"]["n_gpu_layers"] == "all"
    # leave all but ~150 MiB of the 7 GiB free: only some layers fit
    cut = CliRunner().invoke(app, args + ["--fit-target", str(7168 - 150)])
    assert cut.exit_code == 0, cut.output
    plan = json.loads(cut.stdout)[0]["placement_plan"]
    gpu = plan["devices"][1]
    assert 0 < plan["placement"]["n_gpu_layers"] < 31 and gpu["total_bytes"] <= 150 * MIB
    bad = CliRunner().invoke(app, args + ["--ngl", "3"])
    assert bad.exit_code != 0 and "drop --ngl" in str(bad.exception)


def test_the_decode_bound_adds_each_devices_reads_and_each_links_crossings():
    r = CliRunner().invoke(app, ["fit", "--model", "smollm2", "--device",
                                 "raspberry-pi-5-pair-rpc", "--ngl", "all", "--ctx", "2048",
                                 "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)[0]["placement_plan"]
    secs = plan["decode_seconds"]
    rpc = "RPC0[pi5-b:50052]"
    # the hidden state goes out once, the logits (49152 F32) come back over Gigabit Ethernet
    assert secs[f"CPU->{rpc} (network)"] == pytest.approx(576 * 4 / 0.125e9 + 200e-6, rel=1e-3)
    assert secs[f"{rpc}->CPU (network)"] == pytest.approx(49152 * 4 / 0.125e9 + 200e-6, rel=1e-3)
    assert plan["decode_tps_bound"] == pytest.approx(1 / sum(secs.values()), rel=0.01)
    lo, hi = plan["decode_tps_band"]
    assert lo < hi < plan["decode_tps_bound"]
    # an rpc-server the profile does not describe has no bandwidth: no bound, and why
    r = CliRunner().invoke(app, ["fit", "--model", "smollm2", "--device", "laptop-16gb-cpu",
                                 "--ngl", "all", "--rpc", "127.0.0.1:1", "--json"])
    plan = json.loads(r.stdout)[0]["placement_plan"]
    assert plan["decode_tps_bound"] is None and "RPC0[127.0.0.1:1]" in plan["decode_unknown"][0]
