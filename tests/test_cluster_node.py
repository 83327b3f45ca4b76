"""`edgepick node start` as a real Ray head on 127.0.0.1 (in the foreground, stopped by the test),
then `edgepick node list`: the device tag, and the profile the node probed and published."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("ray")

from llama_server import free_port  # noqa: E402


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edgepick", *args], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, RAY_USAGE_STATS_ENABLED="0"))


def test_node_start_publishes_the_probed_profile_and_node_list_shows_it(tmp_path):
    port = free_port()
    log = open(tmp_path / "node.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgepick", "node", "start", "--head", "--block", "--device",
         "bench-box", "--port", str(port), "--node-ip-address", "127.0.0.1", "--num-cpus", "1"],
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, RAY_USAGE_STATS_ENABLED="0"))
    try:
        deadline = time.monotonic() + 240
        node = None
        while node is None:
            assert proc.poll() is None, (tmp_path / "node.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the node never published its profile"
            res = _cli("node", "list", "--address", f"127.0.0.1:{port}", "--json")
            if res.returncode == 0:
                node = next((n for n in json.loads(res.stdout)
                             if n["devices"] == ["bench-box"] and n["profile"]), None)
            if node is None:
                time.sleep(1)
        assert node["state"] == "alive" and node["cpus"] == 1
        assert node["profile"]["name"] == "bench-box" and node["profile"]["measured"]
        assert node["profile"]["bandwidth_gbps"] > 0 and node["profile"]["model_budget_bytes"] > 0
    finally:
        proc.send_signal(signal.SIGINT)  # node start stops its `ray start --block` child
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
