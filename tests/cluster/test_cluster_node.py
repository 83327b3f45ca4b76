"""`edgepick node start` as a real Ray head on 127.0.0.1 (in the foreground, stopped by the test),
then `edgepick node list`: the device tag, and the profile the node probed and published; every
port the node's Ray opened listens on loopback only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from parts import need_module

from ray_head import listening_sockets, ray_process_ids  # noqa: I001

need_module("ray")

from edgepick.cluster.nodes import is_loopback  # noqa: E402
from edgepick.launch import stop  # noqa: E402
from llama_server import free_port  # noqa: E402

ENV = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edgepick", *args], capture_output=True,
                          text=True, timeout=timeout, env=ENV)


def _ctrl_c_as_a_terminal_sends() -> None:
    """The node gets SIGINT as Ctrl-C in a terminal does: not ignored nor blocked, whatever the
    suite's process holds by then. A child inherits both, and in the whole suite SIGINT is
    ignored by the time this test runs: the SIGINT below went unseen and the stop waited out its
    60 s before killing (67 s against 10 s alone)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


def test_node_start_publishes_the_probed_profile_and_node_list_shows_it(tmp_path):
    port = free_port()
    log_path = tmp_path / "node.log"
    log = open(log_path, "w")
    # --bandwidth-mib 32: a short bandwidth probe (what is tested is that it is published)
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgepick", "node", "start", "--head", "--block", "--device",
         "bench-box", "--port", str(port), "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
         "--bandwidth-mib", "32"],
        stdout=log, stderr=subprocess.STDOUT, env=ENV, preexec_fn=_ctrl_c_as_a_terminal_sends)
    try:
        deadline = time.monotonic() + 180
        while "is device" not in log_path.read_text():  # printed once the profile is published
            assert proc.poll() is None, log_path.read_text()[-2000:]
            assert time.monotonic() < deadline, "the node never published its profile"
            time.sleep(0.5)
        socks = listening_sockets(ray_process_ids(proc.pid))
        assert {"gcs_server", "raylet"} <= {name for _, name, _, _ in socks}, socks
        assert [s for s in socks if not is_loopback(s[2])] == []
        res = _cli("node", "list", "--address", f"127.0.0.1:{port}", "--json")
        assert res.returncode == 0, res.stderr[-2000:]
        node = next(n for n in json.loads(res.stdout) if n["devices"] == ["bench-box"])
        assert node["state"] == "alive" and node["cpus"] == 1 and is_loopback(node["address"])
        assert node["profile"]["name"] == "bench-box" and node["profile"]["measured"]
        assert node["profile"]["bandwidth_gbps"] > 0 and node["profile"]["model_budget_bytes"] > 0
    finally:
        stop(proc, signal.SIGINT, 60)  # node start stops its `ray start --block` child
        log.close()


def test_a_loopback_address_is_refused_for_a_node_joining_a_cluster():
    res = _cli("node", "start", "--device", "x", "--address", "192.0.2.1:6379",
               "--node-ip-address", "127.0.0.1")
    assert res.returncode != 0 and "--head" in res.stderr and "Traceback" not in res.stderr
