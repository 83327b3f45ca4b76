"""edgepick convert: GGUF → onnxruntime-genai, torch-free, on the tiny SmolLM2 (real weights)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from parts import need_module

from cli_runner import run_cli

need_module("onnxruntime_genai")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict, str]:
    """One fast build (round-to-nearest, block 64), converted by the CLI into a store."""
    tmp = tmp_path_factory.mktemp("convert")
    store = str(tmp / "results.sqlite")
    out = tmp / "og"
    r = run_cli("convert", "-m", "tiny", "--algo", "default", "--block-size", "64",
                "--out", str(out), "--store", store, "--json")
    assert r.returncode == 0, r.stderr
    return out, json.loads(r.stdout), store


def test_build_is_recorded_and_checked(built):
    out, rec, store = built
    assert rec["recipe"] == {**rec["recipe"], "block_size": 64, "algo": "default",
                             "precision": "int4", "route": "gguf"}
    assert not rec["requantized"] and rec["source_types"] == {"F16": 15}
    for name in ("model.onnx", "model.onnx.data", "genai_config.json", "tokenizer.json",
                 "tokenizer_config.json", "edgepick_convert.json"):
        assert (out / name).is_file(), name
    assert "token IDs identical to llama.cpp's" in rec["tokenizer_check"]
    assert "15 MatMulNBits nodes at block 64" in rec["tokenizer_check"]
    assert len(rec["steps"]) == 5 and rec["seconds"] > 0
    saved = json.loads((out / "edgepick_convert.json").read_text())
    assert saved["build_key"] == rec["build_key"]
    from edgepick.store.results import ResultStore

    with ResultStore(store) as s:
        assert s.get("convert", rec["build_key"])["out_dir"] == str(out)


def test_same_command_reuses_and_rebuild_gives_same_bytes(built, tmp_path):
    out, rec, _ = built
    again = run_cli("convert", "-m", "tiny", "--algo", "default", "--block-size", "64",
                    "--out", str(out), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["skipped"] is True
    other = tmp_path / "og2"
    r = run_cli("convert", "-m", "tiny", "--algo", "default", "--block-size", "64",
                "--out", str(other), "--json")
    assert r.returncode == 0, r.stderr
    assert _sha(other / "model.onnx.data") == _sha(out / "model.onnx.data")
    assert _sha(other / "tokenizer.json") == _sha(out / "tokenizer.json")


def test_other_settings_never_overwrite_without_force(built, tmp_path):
    out, _, _ = built
    r = run_cli("convert", "-m", "tiny", "--algo", "default", "--block-size", "32",
                "--out", str(out))
    assert r.returncode == 2 and "pass --force" in r.stderr and "Traceback" not in r.stderr
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    r = run_cli("convert", "-m", "tiny", "--out", str(foreign))
    assert r.returncode == 2 and "files edgepick did not write" in r.stderr
    assert (foreign / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize("args, message", [
    (["--block-size", "48"], "block size 48 is not supported"),
    (["--block-size", "64"], "odd number of blocks"),  # k_quant, SmolLM2's width 576
    (["--algo", "rtn"], "--algo"),
    (["--lm-head-bits", "8", "--algo", "default"], "needs --algo k_quant"),
    (["--engine", "mlc"], "'mlc' is not supported"),
    (["--context-length", "100000"], "exceeds the model's training context"),
])
def test_bad_options_are_one_line(args, message, tmp_path):
    r = run_cli("convert", "-m", "tiny", "--out", str(tmp_path / "x"), *args)
    assert r.returncode == 2, r.stdout
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x").exists()


def test_unsupported_architecture_and_hf_without_torch(tmp_path):
    import gguf
    import numpy as np

    path = tmp_path / "gpt2.gguf"
    w = gguf.GGUFWriter(str(path), "gpt2")
    w.add_block_count(1)
    w.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    r = run_cli("convert", "-m", str(path), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "architecture 'gpt2' is not supported" in r.stderr
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text('{"model_type": "llama"}')
    r = run_cli("convert", "-m", str(hf), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "needs torch and transformers" in r.stderr


def test_known_pitfalls_warn_with_the_reason():
    from edgepick.convert.recipe import ConvertRecipe, check_recipe
    from edgepick.errors import EdgepickError

    codes = [p.code for p in check_recipe(ConvertRecipe(algo="default", block_size=128),
                                          source_full_precision=False)]
    assert codes == ["default-128", "requantize"]
    with pytest.raises(EdgepickError, match="does not load|could not load"):
        check_recipe(ConvertRecipe(symmetric=False), source_full_precision=True)
    with pytest.raises(EdgepickError, match="only F16/F32"):
        check_recipe(ConvertRecipe(route="hf-builder"), source_full_precision=False)


def test_fp32_graph_matches_llama_cpp(tiny_model, tmp_path):
    """Unquantized, the converted graph gives llama.cpp's next-token distributions: what INT4
    then loses is quantization alone."""
    out = tmp_path / "fp32"
    r = run_cli("convert", "-m", "tiny", "--precision", "fp32", "--out", str(out))
    assert r.returncode == 0, r.stderr
    r = run_cli("fidelity", "-r", "tiny", "-m", str(out), "--ctx", "128", "--chunks", "2",
                "--no-cache", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["kld_mean"] < 1e-3 and res["same_top1"] > 0.97
