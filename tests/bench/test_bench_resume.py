"""`kill -9` in the middle of a sweep, then the same command: it completes, nothing twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil

from edgepick.store import ResultStore


def _stored(store_path: str) -> dict[str, float]:
    if not os.path.exists(store_path):
        return {}
    with ResultStore(store_path) as st:
        return {k: v["created"] for k, v in st.items("bench")}


def test_sigkill_mid_sweep_then_rerun_completes_each_configuration_once(
        cli, tiny_model, store_path):
    args = ["bench", "--model", tiny_model, "--prompt-lengths", "8,16,24,32", "--gen", "8",
            "--warmup", "0", "--repeats", "2", "--threads", "1", "--store", store_path,
            "--json", "--quiet-wait", "0"]  # waiting for a quiet host: test_host_load.py
    proc = subprocess.Popen([sys.executable, "-m", "edgepick", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not _stored(store_path) and time.monotonic() < deadline:
            assert proc.poll() is None, "the sweep ended before it could be interrupted"
            time.sleep(0.02)
        workers = psutil.Process(proc.pid).children(recursive=True)
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, as `kill -9 PID` would
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    before = _stored(store_path)
    assert 1 <= len(before) < 4, "interrupt the sweep mid-way"
    # The worker measuring the next configuration dies with its parent, not later.
    gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive
    rerun = cli(*args)
    assert rerun.returncode == 0, rerun.stderr
    rows = json.loads(rerun.stdout)
    assert [r["settings"]["prompt_tokens"] for r in rows] == [8, 16, 24, 32]
    assert all(r["status"] == "ok" for r in rows)
    assert sum(r["cached"] for r in rows) == len(before)  # what was stored is not measured again
    after = _stored(store_path)
    assert len(after) == 4
    assert {k: after[k] for k in before} == before  # stored rows untouched by the rerun
    with ResultStore(store_path) as st:
        assert st.count() == 4
