"""Bad input to the quantize commands: one line on stderr, exit code 2, nothing built."""

from __future__ import annotations

import json

import pytest


def _one_line_error(r) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


def test_unknown_type_is_one_line(cli, tiny_model, tmp_path):
    line = _one_line_error(cli("quantize", "-m", tiny_model, "--quant", "Q4_0,Q9_9", "--out",
                               str(tmp_path)))
    assert "unknown quantization type 'Q9_9'" in line
    assert not list(tmp_path.iterdir())  # validated before anything was built


@pytest.mark.parametrize("content", [b"", b"hello, not a model\n", b"GGUF\x03\x00"])
def test_non_gguf_source_is_one_line(cli, tmp_path, content):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(content)
    line = _one_line_error(cli("quantize", "-m", str(bad), "--quant", "Q4_0", "--out",
                               str(tmp_path / "out")))
    assert str(bad) in line and "GGUF" in line


def test_non_gguf_for_imatrix_and_sensitivity(cli, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("plain text\n")
    assert "not a GGUF" in _one_line_error(cli("imatrix", "-m", str(bad), "--text", str(bad)))
    assert "not a GGUF" in _one_line_error(cli("sensitivity", "-m", str(bad), "--text", str(bad)))


def test_missing_source_is_one_line(cli, tmp_path):
    line = _one_line_error(cli("quantize", "-m", str(tmp_path / "nope.gguf"), "--out", str(tmp_path)))
    assert "nope.gguf" in line


def test_bad_budget_and_types_for_a_recipe(cli, tiny_model, tmp_path):
    line = _one_line_error(cli("quantize", "-m", tiny_model, "--recipe", "auto", "--budget", "lots",
                               "--out", str(tmp_path)))
    assert "--budget" in line
    line = _one_line_error(cli("sensitivity", "-m", tiny_model, "--high", "F16"))
    assert "--high F16" in line
    line = _one_line_error(cli("sensitivity", "-m", tiny_model, "--low", "Q4_O"))
    assert "unknown quantization type" in line


def test_bad_recipe_yaml_names_the_file(cli, tiny_model, tmp_path):
    bad = tmp_path / "bad.recipe.yaml"
    bad.write_text("low: Q4_0\nhigh: [unclosed\n")
    line = _one_line_error(cli("quantize", "-m", tiny_model, "--recipe", str(bad), "--out",
                               str(tmp_path)))
    assert str(bad) in line
    bad.write_text("low: Q4_0\n")
    line = _one_line_error(cli("quantize", "-m", tiny_model, "--recipe", str(bad), "--out",
                               str(tmp_path)))
    assert str(bad) in line and "field" in line


def test_imatrix_is_used_by_quantize(cli, tiny_model, tmp_path):
    from edgepick.evaluate.fidelity import bundled_text

    im = tmp_path / "tiny.imatrix.gguf"
    r = cli("imatrix", "-m", tiny_model, "--text", str(bundled_text("calibration")), "--out", str(im),
            "--ctx", "128", "--chunks", "2", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["path"] == str(im) and im.stat().st_size > 0
    r = cli("quantize", "-m", tiny_model, "--quant", "Q4_0", "--imatrix", str(im), "--out",
            str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    with_m = json.loads(r.stdout)[0]
    r = cli("quantize", "-m", tiny_model, "--quant", "Q4_0", "--out", str(tmp_path / "plain"), "--json")
    plain = json.loads(r.stdout)[0]
    # same tensor types and bytes, different values: the importance weights changed the
    # rounding (the file also names the matrix in its metadata, hence a few bytes more)
    from edgepick.models.gguf_info import gguf_spec

    assert with_m["tensor_types"] == plain["tensor_types"]
    assert gguf_spec(with_m["path"]).weights_bytes == gguf_spec(plain["path"]).weights_bytes
    assert with_m["sha256"] != plain["sha256"]
    assert with_m["imatrix"] == str(im)
