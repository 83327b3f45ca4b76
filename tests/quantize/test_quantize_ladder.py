"""The quantization ladder on the tiny 2-block model, built by llama.cpp's own llama-quantize."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from edgepick.models.gguf_info import gguf_spec

TYPES = ["Q8_0", "Q4_K_M", "Q4_0", "Q2_K"]


@pytest.fixture(scope="module")
def ladder(tiny_model, tmp_path_factory):
    from cli_runner import run_cli

    out = tmp_path_factory.mktemp("ladder")
    r = run_cli("quantize", "-m", tiny_model, "--quant", ",".join(TYPES), "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    return out, json.loads(r.stdout), r


def test_one_file_per_type_named_predictably(ladder, tiny_model):
    out, files, _ = ladder
    stem = Path(tiny_model).name[: -len(".gguf")]
    assert [f["type"] for f in files] == TYPES
    for f in files:
        assert f["path"] == str(out / f"{stem}.{f['type']}.gguf")
        assert os.path.getsize(f["path"]) == f["size_bytes"]
        assert set(f) >= {"path", "type", "size_bytes", "bpw", "fallbacks"}
    sizes = {f["type"]: f["size_bytes"] for f in files}
    assert sizes["Q8_0"] > sizes["Q4_K_M"] > sizes["Q4_0"] > sizes["Q2_K"]


def test_files_carry_the_types_asked_for(ladder):
    _, files, _ = ladder
    by_type = {f["type"]: gguf_spec(f["path"]).quant_types for f in files}
    assert "Q8_0" in by_type["Q8_0"] and "Q4_0" in by_type["Q4_0"]
    # ffn_down rows (1536) divide by 256, so K-quants really appear there
    assert "Q4_K" in by_type["Q4_K_M"] or "Q6_K" in by_type["Q4_K_M"]
    for f in files:
        spec = gguf_spec(f["path"])
        assert f["bpw"] == pytest.approx(spec.bits_per_weight, abs=1e-3)


def test_fallbacks_are_reported_and_match_the_file(ladder):
    """SmolLM2's 576-wide rows are not a multiple of 256: K-quants fall back for them."""
    _, files, _ = ladder
    by_type = {f["type"]: f for f in files}
    assert by_type["Q8_0"]["fallbacks"] == []
    # Q4_0 gives the tied output/embedding Q6_K, which falls back to Q8_0; the rest is Q4_0
    assert [(f["tensor"], f["got"]) for f in by_type["Q4_0"]["fallbacks"]] == \
        [("token_embd.weight", "Q8_0")]
    fb = by_type["Q4_K_M"]["fallbacks"]
    assert fb, "Q4_K_M on 576-wide rows must fall back"
    types = {t.name: t.type for t in gguf_spec(by_type["Q4_K_M"]["path"]).tensors}
    for f in fb:
        assert f["ncols"] % f["block"] != 0
        assert types[f["tensor"]] == f["got"]
        assert f["wanted"] != f["got"]
    assert any(f["tensor"] == "blk.0.attn_q.weight" for f in fb)
    assert by_type["Q2_K"]["fallbacks"]


def test_every_file_loads_and_generates(ladder):
    from edgepick.backends import get_backend
    from edgepick.records.candidate import Candidate, RuntimeSettings

    _, files, _ = ladder
    for f in files:
        b = get_backend("llama_cpp")
        b.load(Candidate(model=f["path"], settings=RuntimeSettings(n_ctx=128)))
        try:
            gen = b.generate("The capital of France is", max_tokens=4, ignore_eos=True)
        finally:
            b.unload()
        assert gen.generated_tokens == 4, f["type"]


def test_rerun_reuses_identical_builds(ladder, tiny_model):
    from cli_runner import run_cli

    out, files, _ = ladder
    mtimes = {f["path"]: os.stat(f["path"]).st_mtime_ns for f in files}
    r = run_cli("quantize", "-m", tiny_model, "--quant", "Q8_0,Q4_0", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    again = json.loads(r.stdout)
    assert all(f["skipped"] for f in again)
    assert all(os.stat(f["path"]).st_mtime_ns == mtimes[f["path"]] for f in again)


def test_changed_file_is_rebuilt(ladder, tiny_model, tmp_path):
    from edgepick.quantize.ladder import build

    out, files, _ = ladder
    q4 = next(f for f in files if f["type"] == "Q4_0")
    copy = tmp_path / Path(q4["path"]).name
    first = build(tiny_model, copy, "Q4_0")
    assert not first.skipped
    with open(copy, "r+b") as fh:  # damage the bytes: the record no longer matches
        fh.seek(-4, os.SEEK_END)
        fh.write(b"\0\1\2\3")
    second = build(tiny_model, copy, "Q4_0")
    assert not second.skipped and second.sha256 == first.sha256


def test_requantizing_warns_loudly(ladder, tmp_path):
    from cli_runner import run_cli

    _, files, _ = ladder
    q8 = next(f for f in files if f["type"] == "Q8_0")["path"]
    r = run_cli("quantize", "-m", q8, "--quant", "Q4_0", "--out", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    assert "WARNING: requantizing" in r.stderr and "Q8_0" in r.stderr
    rec = json.loads(r.stdout)[0]
    assert rec["requantized"] is True
    assert "Q4_0" in gguf_spec(rec["path"]).quant_types


def test_fresh_source_does_not_warn(ladder):
    _, _, result = ladder
    assert "requantizing" not in result.stderr
