"""`edgepick models pull`: a model on a stand-in hub downloaded into the registry, through
connections dropped mid-body and a CLI killed mid-download, finishing with the hub's SHA-256;
the registry never lists a partial version, and a file that is not the one listed is refused."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remote_hub import stand_in_hub

from edgepick.errors import EdgepickError
from edgepick.inputs import resolve_ref
from edgepick.registry.pull import PULLS, pull
from edgepick.registry.store import Registry

REPO = "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF"
FILE = "smollm2-135m-instruct-q4_1.gguf"


def _sha(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


@pytest.fixture()
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPICK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    for var in ("EDGEPICK_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _versions(root: Path) -> dict:
    state = root / "registry.json"
    if not state.is_file():
        return {}
    models = json.loads(state.read_text())["models"]
    return {n: sorted(e["versions"]) for n, e in models.items()}


def test_pull_resumes_dropped_connections_and_matches_the_hub(env, smollm2_q4_1, monkeypatch):
    src = Path(smollm2_q4_1)
    with stand_in_hub({REPO: {FILE: src}}, token="hf_secret") as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        ref = resolve_ref(f"hf:{REPO}/{FILE}", remote_ok=True)
        hub.cdn.cut_after = [10 << 20, 30 << 20]  # two answers cut mid-body
        reg = Registry(env / "reg", create=True)
        ve = pull(reg, ref, "smollm2", "q4_1", headers={"Authorization": "Bearer hf_secret"})
        ranges = [s.range for s in hub.cdn.seen]
        assert all(s.authorization is None for s in hub.cdn.seen)  # never past the redirect
    assert ve.sha256 == _sha(src) == ref.remote.parts[0].sha256
    assert _sha(reg.path_of("smollm2", "q4_1")) == _sha(src)
    assert ranges[-2:] == [f"bytes={10 << 20}-", f"bytes={40 << 20}-"]
    assert not list((env / "reg" / PULLS).iterdir())


def test_a_file_that_is_not_the_listed_one_is_refused(env, smollm2_q4_1, monkeypatch):
    src = Path(smollm2_q4_1)
    with stand_in_hub({REPO: {FILE: src}}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        hub.sha[src] = "0" * 64  # the hub lists another SHA-256
        ref = resolve_ref(f"hf:{REPO}/{FILE}", remote_ok=True)
        reg = Registry(env / "reg", create=True)
        with pytest.raises(EdgepickError, match="SHA-256"):
            pull(reg, ref, "smollm2", "q4_1")
    assert _versions(env / "reg") == {}
    assert not list((env / "reg" / PULLS).iterdir())  # the bad download is not kept


def test_cli_pull_killed_twice_then_finishes(env, smollm2_q4_1):
    src = Path(smollm2_q4_1)
    root = env / "reg"
    with stand_in_hub({REPO: {FILE: src}}) as hub:
        run_env = {**os.environ, "HF_ENDPOINT": hub.url, "COLUMNS": "100"}
        cmd = [sys.executable, "-m", "edgepick", "models", "pull", f"hf:{REPO}/{FILE}",
               "--name", "smollm2", "--version", "1", "--registry", str(root)]
        hub.cdn.block_delay = 0.004  # about 16 MB/s: time to kill it mid-body
        held = 0
        for _ in range(2):
            proc = subprocess.Popen(cmd, env=run_env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                parts = list((root / PULLS).glob("*.part")) if (root / PULLS).is_dir() else []
                if parts and parts[0].stat().st_size > held + (4 << 20):
                    break
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            assert _versions(root) == {}  # killed: no version, not even a partial one
            assert not (root / "models").exists() or not any((root / "models").rglob("*.gguf"))
            held = parts[0].stat().st_size
            assert 0 < held < src.stat().st_size
        hub.cdn.block_delay = 0
        done = subprocess.run(cmd, env=run_env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        resumed = [s.range for s in hub.cdn.seen if s.range and s.range.endswith("-")]
    assert len(resumed) >= 2  # the second and third runs went on from where the last stopped
    assert "pulled smollm2@1" in done.stdout and "SHA-256" in done.stdout
    assert _versions(root) == {"smollm2": ["1"]}
    assert _sha(Registry(root).path_of("smollm2", "1")) == _sha(src)
    assert not list((root / PULLS).iterdir())
