"""`edgepick models update`: a package applied into a new registry version and probed on the
device before it serves. On the bundled SmolLM2 with Q8_0 active: an update to a Q2_K build is
stopped by the probe (the active version stays, the probe is recorded, the reason is given); a
"fine-tune" of two blocks passes and is activated; a package for another base or a corrupt one
is refused with nothing written; kill -9 at any moment of an update, again and again, leaves the
registry whole with the old version active."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from gguf_synth import write_gguf
from update_pairs import _finetune, _quant

from edgepick.registry.store import Registry
from edgepick.update.diff import diff

NAME = "smollm2"


@pytest.fixture(scope="session")
def builds(smollm2_f16, tmp_path_factory):
    from parts import need_tool

    from edgepick.assets.bundled import cache_dir

    need_tool("llama-quantize")
    folder = cache_dir() / "update-probe-smollm2"
    folder.mkdir(parents=True, exist_ok=True)
    q8 = _quant(smollm2_f16, folder / "q8_0.gguf", "Q8_0")
    q2 = _quant(smollm2_f16, folder / "q2_k.gguf", "Q2_K")
    ft = _finetune(q8, folder / "q8_0-finetune.gguf")
    pk = tmp_path_factory.mktemp("packages")
    # any package whose base the registry does not hold: two small random files
    other = [write_gguf(pk / f"{v}.gguf", {"general.name": v}, [("w", "F32", np.eye(32) * i)])
             for i, v in enumerate(("a", "b"))]
    return {"q8": q8, "q2": q2, "ft": ft,
            "to_q2": diff(q8, q2, pk / "to-q2.epd").path,
            "to_ft": diff(q8, ft, pk / "to-ft.epd").path,
            "foreign": diff(*other, pk / "foreign.epd").path}


@pytest.fixture(scope="session")
def template(builds, tmp_path_factory):
    root = tmp_path_factory.mktemp("update_registry") / "registry"
    reg = Registry(root, create=True)
    reg.add(builds["q8"], NAME, "q8")
    reg.commit(NAME, "q8")  # as `models activate` leaves it (the engine start is not the point)
    return root


@pytest.fixture
def reg(template, tmp_path):
    root = tmp_path / "registry"
    shutil.copytree(template, root, copy_function=os.link)
    return root


def _deploy(folder, q8, n_items: int):
    """A deploy.yaml whose update: section keeps the probe short (128 tokens read), with
    format checks on `n_items` items of the bundled demo set."""
    import yaml

    path = folder / f"deploy-{n_items}.yaml"
    path.write_text(yaml.safe_dump({
        "model": {"name": NAME, "path": str(q8), "sha256": "0" * 64},
        "update": {"ctx": 64, "chunks": 2, "n_items": n_items, "max_tokens": 8}}))
    return path


@pytest.fixture(scope="session")
def quick(builds, tmp_path_factory):
    return _deploy(tmp_path_factory.mktemp("deploy"), builds["q8"], 0)


@pytest.fixture(scope="session")
def checked(builds, tmp_path_factory):
    return _deploy(tmp_path_factory.mktemp("deploy"), builds["q8"], 2)


def _state(root) -> dict:
    return json.loads(Registry(root).state().model_dump_json())["models"][NAME]


def test_a_q2_k_update_is_stopped_by_the_probe(cli, reg, builds):
    out = cli("models", "update", NAME, str(builds["to_q2"]), "--registry", str(reg),
              "--version", "q2k")
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "failed the probe" in out.stderr and "smollm2@q8 stays active" in out.stderr
    assert "kld" in out.stderr and "Traceback" not in out.stderr
    m = _state(reg)
    assert m["active"] == "q8"
    probe = m["versions"]["q2k"]["probe"]
    assert probe["passed"] is False and probe["against"] == "smollm2@q8" and probe["tokens"] > 100
    assert m["events"][-1]["action"] == "probe" and "failed" in m["events"][-1]["detail"]
    stored = reg / m["versions"]["q2k"]["file"]
    assert stored.read_bytes() == builds["q2"].read_bytes()  # applied byte for byte
    assert (reg / m["versions"]["q2k"]["manifest"]).is_file()


def test_a_fine_tune_passes_and_is_activated(cli, reg, builds, checked):
    from serve_harness import need_llama_server

    need_llama_server()
    out = cli("models", "update", NAME, str(builds["to_ft"]), "--registry", str(reg),
              "--version", "ft", "--deploy", str(checked))
    assert out.returncode == 0, (out.stdout, out.stderr)
    m = _state(reg)
    assert m["active"] == "ft" and m["history"] == ["q8"]
    probe = m["versions"]["ft"]["probe"]
    assert probe["passed"] is True and probe["tokens"] == 2 * 31
    assert [c["name"] for c in probe["checks"]] == ["kld", "same_top1", "format_errors"]
    assert m["versions"]["ft"]["origin"].startswith("update from q8")
    manifest = Registry(reg).manifest(NAME, "ft")
    assert manifest.sha256 == m["versions"]["ft"]["sha256"] and len(manifest.tensors) > 200
    assert [e["action"] for e in m["events"]][-3:] == ["update", "probe", "activate"]


def test_wrong_base_or_corrupt_package_is_refused(cli, reg, builds, tmp_path):
    before = _state(reg)
    out = cli("models", "update", NAME, str(builds["foreign"]), "--registry", str(reg))
    assert out.returncode == 2 and "refusing it, nothing was written" in out.stderr
    bad = tmp_path / "bad.epd"
    data = bytearray(builds["to_ft"].read_bytes())
    data[len(data) // 2] ^= 1
    bad.write_bytes(bytes(data))
    out = cli("models", "update", NAME, str(bad), "--registry", str(reg))
    assert out.returncode == 2 and "corrupt" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert _state(reg) == before
    assert sorted(p.name for p in (reg / "models" / NAME).iterdir()) == ["q8"]


@pytest.mark.parametrize("step", ["add-copied", "add-placed", "update-built", "update-probed",
                                  "activate-pending"])
def test_crash_at_each_step_keeps_the_old_version_active(cli, reg, builds, quick, step):
    out = cli("models", "update", NAME, str(builds["to_ft"]), "--registry", str(reg),
              "--version", "ft", "--deploy", str(quick), env={"EDGEPICK_REGISTRY_CRASH_AT": step})
    assert out.returncode == 75, out.stderr
    assert _state(reg)["active"] == "q8"


def test_repeated_kill_9_leaves_the_registry_consistent(reg, builds, quick):
    from serve_harness import need_llama_server

    need_llama_server()
    argv = [sys.executable, "-m", "edgepick", "models", "update", NAME, str(builds["to_ft"]),
            "--registry", str(reg), "--version", "ft", "--deploy", str(quick)]
    for delay in (0.5, 1.5, 3.0, 5.0):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        m = _state(reg)  # a whole state file, every time
        assert m["active"] in ("q8", "ft")
        if m["active"] == "ft":  # the commit happened before the kill: whole and verified
            Registry(reg).verify(NAME, "ft")
            break
        assert m.get("pending") in (None, "ft")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 or "already in the registry" not in done.stderr, done.stderr
    m = _state(reg)
    assert m["active"] == "ft" and m["versions"]["ft"]["probe"]["passed"] is True
    assert m["versions"]["ft"]["sha256"] == Registry(reg).manifest(NAME, "ft").sha256
