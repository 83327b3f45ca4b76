"""docs/operations.md runs as written: every `sh` block, in order, in a fresh folder holding the
repository's examples/, with `edgepick` on PATH — on a free port instead of 8080. The server the
page starts in the background (`… &`) is stopped at the end, whatever happened."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from parts import missing, need_tool

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "operations.md"


def sh_blocks(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"```sh\n(.*?)```", text, re.S)]


def _stop(pgids: list[int]) -> None:
    for pgid in pgids:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            try:
                os.waitpid(-pgid, 0)
            except ChildProcessError:
                pass
            if sig == signal.SIGTERM:
                _gone(pgid, 2.0)


def _gone(pgid: int, timeout_s: float) -> None:
    """Until no process is left in the group (a SIGTERM'd server exits within a moment), at most
    `timeout_s`: a fixed sleep cost the suite its whole length every time."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def test_the_operations_page_runs_as_written(tmp_path):
    from edgepick.launch import free_port

    need_tool("llama-server")

    port = str(free_port())
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
               EDGEPICK_HOME=str(tmp_path / "home"))
    prelude = "set -e\n"
    if shutil.which("promtool") is None:
        if os.environ.get("CI", "").lower() == "true":
            missing("promtool (apt-get install prometheus)")
        warnings.warn("promtool is not installed: the page's `promtool check rules` step was "
                      "not run (CI runs it)")
        prelude += "promtool() { echo 'promtool: not installed here' >&2; }\n"
    blocks = sh_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 8 and any(b.rstrip().endswith("&") or "&\n" in b for b in blocks)
    sessions: list[int] = []
    try:
        for i, block in enumerate(blocks, 1):
            script = block.replace("8080", port)
            log = tmp_path / f"block{i}.log"
            with open(log, "w") as out:
                p = subprocess.Popen(["bash", "-c", prelude + script], cwd=tmp_path, env=env,
                                     stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
                if "&\n" in script:
                    sessions.append(p.pid)  # the background server stays in this group
                try:
                    rc = p.wait(timeout=240)
                except subprocess.TimeoutExpired:
                    sessions.append(p.pid)
                    pytest.fail(f"block {i} did not finish in 240 s:\n{block}\n"
                                f"{log.read_text()[-3000:]}")
            allowed = (0, 1) if "--check" in block else (0,)
            assert rc in allowed, f"block {i} exited {rc}:\n{block}\n{log.read_text()[-3000:]}"
    finally:
        _stop(sessions)
    out = tmp_path / "edgepick-out"
    assert (out / "deploy.yaml").is_file() and list(out.glob("deploy-*.yaml"))
    assert (tmp_path / "traffic.jsonl").read_text(encoding="utf-8").strip()
