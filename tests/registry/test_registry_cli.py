"""`edgepick models add/list/activate/rollback/remove` without a server, a checksum mismatch
refused, and a crash forced between every two steps of an activation leaving the registry
consistent (the previous version, or the new one fully)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from edgepick.registry.store import Registry

STEPS = ["activate-verified", "activate-pending", "activate-started", "activate-committed"]


def _list(cli, reg) -> dict:
    out = cli("models", "list", "--registry", str(reg), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["models"]


@pytest.fixture(scope="module")
def template(tiny_model, tmp_path_factory):
    from cli_runner import run_cli
    from serve_harness import need_llama_server

    need_llama_server()
    root = tmp_path_factory.mktemp("registry_template") / "registry"
    for v in ("1", "2"):
        out = run_cli("models", "add", tiny_model, "--name", "tiny", "--version", v,
                      "--registry", str(root))
        assert out.returncode == 0, out.stderr
    out = run_cli("models", "activate", "tiny@1", "--registry", str(root))
    assert out.returncode == 0, out.stderr
    return root


@pytest.fixture
def reg(template, tmp_path):
    # hard links: each test gets its own registry without copying the model files again
    root = tmp_path / "registry"
    shutil.copytree(template, root, copy_function=os.link)
    return root


def test_add_list_activate_rollback_remove(cli, reg):
    m = _list(cli, reg)["tiny"]
    assert m["active"] == "1" and set(m["versions"]) == {"1", "2"}
    assert len(m["versions"]["1"]["sha256"]) == 64
    out = cli("models", "activate", "tiny@2", "--registry", str(reg))
    assert out.returncode == 0, out.stderr
    m = _list(cli, reg)["tiny"]
    assert m["active"] == "2" and m["history"] == ["1"]
    assert (reg / m["versions"]["1"]["file"]).is_file()  # the old version stays on disk
    out = cli("models", "remove", "tiny@2", "--registry", str(reg))
    assert out.returncode == 2 and "is active" in out.stderr
    out = cli("models", "rollback", "tiny", "--registry", str(reg))
    assert out.returncode == 0, out.stderr
    assert _list(cli, reg)["tiny"]["active"] == "1"
    out = cli("models", "remove", "tiny@2", "--registry", str(reg))
    assert out.returncode == 0, out.stderr
    assert set(_list(cli, reg)["tiny"]["versions"]) == {"1"}
    human = cli("models", "list", "--registry", str(reg))
    assert "tiny" in human.stdout and "active" in human.stdout


def test_checksum_mismatch_is_refused(cli, reg):
    m = _list(cli, reg)["tiny"]
    stored = reg / m["versions"]["2"]["file"]
    data = bytearray(stored.read_bytes())
    data[-1] ^= 0xFF
    tmp = stored.with_suffix(".corrupt")
    tmp.write_bytes(bytes(data))
    tmp.replace(stored)  # a new file: the template's hard link keeps the good bytes
    out = cli("models", "activate", "tiny@2", "--registry", str(reg))
    assert out.returncode == 2
    assert "SHA-256" in out.stderr and "refusing" in out.stderr
    assert "Traceback" not in out.stderr
    assert _list(cli, reg)["tiny"]["active"] == "1"


@pytest.mark.parametrize("step", STEPS)
def test_crash_mid_activation_leaves_registry_consistent(cli, reg, step):
    out = cli("models", "activate", "tiny@2", "--registry", str(reg),
              env={"EDGEPICK_REGISTRY_CRASH_AT": step})
    assert out.returncode == 75  # killed at that step
    m = _list(cli, reg)["tiny"]
    expected = "2" if step == "activate-committed" else "1"
    assert m["active"] == expected
    state = Registry(reg).state()  # a whole, valid state file
    assert state.models["tiny"].active == expected
    assert not list(reg.glob("*.tmp"))
    if step == "activate-pending":  # the leftover pending mark does not block a later activation
        assert state.models["tiny"].pending == "2"
        out = cli("models", "activate", "tiny@2", "--registry", str(reg))
        assert out.returncode == 0, out.stderr
        assert _list(cli, reg)["tiny"]["active"] == "2"


def test_crash_mid_add_changes_nothing(cli, reg, tiny_model):
    for step in ("add-copied", "add-placed"):
        out = cli("models", "add", tiny_model, "--name", "tiny", "--version", f"3{step[-1]}",
                  "--registry", str(reg), env={"EDGEPICK_REGISTRY_CRASH_AT": step})
        assert out.returncode == 75
    assert set(_list(cli, reg)["tiny"]["versions"]) == {"1", "2"}


def test_bad_input_is_one_line(cli, tmp_path):
    out = cli("models", "list", "--registry", str(tmp_path / "nowhere"))
    assert out.returncode == 2 and "not a model registry" in out.stderr
    out = cli("models", "add", str(tmp_path / "missing.gguf"), "--name", "a", "--version", "1",
              "--registry", str(tmp_path / "r"))
    assert out.returncode == 2 and "no such file" in out.stderr
