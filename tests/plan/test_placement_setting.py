"""Placement as a runtime setting: llama.cpp's -ngl, --rpc, -ot, --n-cpu-moe and -ts written
flat in a plan's runtime, each list an axis of candidates (`half` read from each model's block
count), a bad value refused in one line naming its plan line, the in-process engine refusing
what it cannot apply for that candidate only, fit planning memory per device for each
candidate's placement, and llama-server getting exactly `Placement.llama_args()`."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from edgepick.backends.llama_cpp_placement import offload_backends, placement_problem
from edgepick.devices.catalog import load_device
from edgepick.errors import EdgepickError, InputError
from edgepick.fit.stage import FitRequest, FitTarget, run as fit_run
from edgepick.models.spec import ref_spec
from edgepick.plan.loader import load_plan
from edgepick.plan.runner import plan_candidates
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.model_ref import ModelRef
from edgepick.records.placement import Placement
from edgepick.serve.engine.llama_server import EngineSpec, llama_server_command

RPC = "127.0.0.1:50052"
PLAN = f"""
name: place
device: raspberry-pi-5
candidates:
  - model: smollm2
    backend: llama_server
eval: {{enabled: false}}
runtime:
  threads: 1
  n_ctx: 256
  n_gpu_layers: [0, half, all]
  rpc: [{RPC}]
"""


def _plan(tmp_path, text: str = PLAN):
    p = tmp_path / "plan.yaml"
    p.write_text(text)
    return load_plan(p)


def test_each_layer_count_is_a_candidate_over_the_rpc_device(tmp_path):
    by = {c.name: c for c in plan_candidates(_plan(tmp_path))}
    assert list(by) == ["smollm2@ngl=0", "smollm2@ngl=half", "smollm2@ngl=all"]
    n_layer = ref_spec(by["smollm2@ngl=0"].ref).n_layers
    want = {"smollm2@ngl=0": 0, "smollm2@ngl=half": n_layer // 2, "smollm2@ngl=all": "all"}
    for name, c in by.items():
        assert not c.skipped, name
        assert c.settings.placement.n_gpu_layers == want[name]
        assert c.settings.placement.rpc == [RPC]  # one endpoint: not an axis, every candidate's
    assert by["smollm2@ngl=half"].settings.placement.llama_args() == [
        "-ngl", str(n_layer // 2), "--rpc", RPC]


def test_set_once_it_applies_to_every_candidate_without_renaming_them(tmp_path):
    text = PLAN.replace("n_gpu_layers: [0, half, all]", "n_gpu_layers: all").replace(
        f"rpc: [{RPC}]", f"rpc: {RPC}")
    (c,) = plan_candidates(_plan(tmp_path, text))
    assert c.name == "smollm2" and c.settings.placement.llama_args() == [
        "-ngl", "all", "--rpc", RPC]


@pytest.mark.parametrize("line, field, words", [
    ("  n_gpu_layers: [0, most]", "runtime.n_gpu_layers[1]", "expected a number of layers"),
    ("  n_gpu_layers: -3", "runtime.n_gpu_layers", "expected 0 or more"),
    ("  rpc: [localhost]", "runtime.rpc[0]", "expected HOST:PORT"),
    ("  tensor_overrides: ['blk\\.(=CPU', 'x=CPU']", "runtime.tensor_overrides[0]",
     "tensor override"),
    ("  tensor_split: [3/1, a]", "runtime.tensor_split[1]", "expected proportions"),
    ("  n_cpu_moe: [0, -1]", "runtime.n_cpu_moe[1]", "greater than or equal to 0"),
])
def test_a_bad_value_is_one_line_naming_its_plan_line(tmp_path, line, field, words):
    base = PLAN.replace(f"  rpc: [{RPC}]\n", "") if "rpc" in line else PLAN
    text = base.replace("  n_gpu_layers: [0, half, all]", line)
    with pytest.raises(InputError) as exc:
        _plan(tmp_path, text)
    msg = str(exc.value)
    assert "\n" not in msg and words in msg and exc.value.field == field
    assert exc.value.line == text.splitlines().index(line) + 1


def test_the_in_process_engine_refuses_what_it_cannot_apply_for_that_candidate_only(tmp_path):
    text = PLAN.replace("    backend: llama_server\n",
                        "    backend: llama_server\n  - model: smollm2\n    label: inproc\n")
    by = {c.name: c for c in plan_candidates(_plan(tmp_path, text))}
    assert len(by) == 6
    for name, c in by.items():
        if name.startswith("inproc"):  # llama-cpp-python takes no RPC servers
            assert "--rpc" in c.skipped and "llama_server" in c.skipped, name
            assert "\n" not in c.skipped
        else:
            assert not c.skipped, name
    # without --rpc: every layer on the CPU is what it runs anyway; offloading needs a device
    # this CPU-only build does not have
    assert placement_problem(RuntimeSettings(n_gpu_layers=0)) is None
    if not offload_backends():
        why = placement_problem(RuntimeSettings(n_gpu_layers="all"))
        assert "no backend beside the CPU" in why and "llama_server" in why


def test_flat_and_grouped_are_one_record_and_plain_settings_keep_their_keys():
    flat = RuntimeSettings(n_gpu_layers=4, rpc=f"{RPC},10.0.0.2:50052", tensor_split="3,1")
    grouped = RuntimeSettings(placement={"n_gpu_layers": 4, "rpc": [RPC, "10.0.0.2:50052"],
                                         "tensor_split": [3, 1]})
    assert flat == grouped and flat.key_dict() == grouped.key_dict()
    assert flat.placement.llama_args() == ["-ngl", "4", "--rpc", f"{RPC},10.0.0.2:50052",
                                           "-ts", "3,1"]
    # what is set, as deploy.yaml carries it; read back it is the same record
    assert RuntimeSettings(n_gpu_layers=0, rpc=RPC).model_dump()["placement"] == {
        "n_gpu_layers": 0, "rpc": [RPC]}
    assert RuntimeSettings.model_validate(flat.model_dump()) == flat
    assert "placement" not in RuntimeSettings().key_dict()
    assert "placement" not in RuntimeSettings().model_dump()
    with pytest.raises(ValidationError, match="given twice"):
        RuntimeSettings(n_gpu_layers=4, placement={"n_gpu_layers": 2})


def test_llama_server_gets_exactly_the_placements_flags():
    def cmd(rt):
        return llama_server_command(EngineSpec(path="m.gguf", name="m", runtime=rt), "srv", 1)

    assert "-ngl" not in cmd(RuntimeSettings()) and "--rpc" not in cmd(RuntimeSettings())
    p = Placement(n_gpu_layers=7, rpc=[RPC], tensor_overrides=[r"blk\.1\.ffn_.*=CPU"],
                  n_cpu_moe=1)
    c = cmd(RuntimeSettings(placement=p))
    i = c.index("-ngl")
    assert c[i:i + len(p.llama_args())] == p.llama_args()


def test_fit_plans_memory_per_device_for_the_candidates_placement(tiny_model):
    dev = load_device("raspberry-pi-5")
    ref = ModelRef.of(tiny_model)

    def estimate(placement):
        return fit_run(FitRequest(targets=[FitTarget(model=ref, file=tiny_model)], ctxs=[256],
                                  device=dev, placement=placement), None)[0]

    assert estimate(None).placement is None
    half = estimate(Placement(n_gpu_layers="half", rpc=[RPC])).placement
    rows = {d.name: d for d in half.devices}
    assert set(rows) == {"CPU", f"RPC0[{RPC}]"}
    n_layer = ref_spec(ref).n_layers
    # llama.cpp's -ngl counts the output layer as one: half moves it and n_layer // 2 - 1 blocks
    assert rows[f"RPC0[{RPC}]"].output
    assert rows[f"RPC0[{RPC}]"].layers == list(range(n_layer - n_layer // 2 + 1, n_layer))
    assert half.llama_args[:4] == ["-ngl", str(n_layer // 2), "--rpc", RPC]
    every = {d.name: d for d in estimate(Placement(n_gpu_layers="all", rpc=[RPC])).placement
             .devices}
    assert every[f"RPC0[{RPC}]"].output and every["CPU"].context_bytes == 0


def test_a_placement_on_an_engine_without_it_refuses_the_plan_naming_one_with_it(tmp_path):
    text = PLAN.replace("  - model: smollm2\n    backend: llama_server\n",
                        "  - model: http://127.0.0.1:9/v1#m\n")
    with pytest.raises(EdgepickError, match="does not apply placement.*llama_cpp or llama_server"):
        plan_candidates(_plan(tmp_path, text))
