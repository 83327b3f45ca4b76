"""`edgepick node rpc`: llama.cpp's rpc-server on 127.0.0.1 unless an address is named, and a
plain warning when one is."""

from __future__ import annotations

import signal
import subprocess
import sys

from typer.testing import CliRunner

from edgepick.cli import node_rpc
from edgepick.cli.app import app
from edgepick.launch.process import free_port
from edgepick.launch.stop import stop
from llama_placement_log import _wait_port
from parts import need_tool


class _Done:
    returncode = 0

    def wait(self, *a):
        return 0


def test_naming_an_address_warns_what_it_exposes(monkeypatch):
    started = []
    monkeypatch.setattr(node_rpc, "start", lambda argv: started.append(argv) or _Done())
    r = CliRunner().invoke(app, ["node", "rpc", "--host", "192.168.1.20", "--port", "50100"])
    assert r.exit_code == 0, r.output
    assert started[0][1:] == ["-H", "192.168.1.20", "-p", "50100"]
    said = " ".join(r.output.split())
    assert "no authentication" in said and "192.168.1.20:50100" in said


def test_it_binds_to_loopback_by_default_and_stops_on_ctrl_c():
    need_tool("ggml-rpc-server")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "edgepick", "node", "rpc", "--port", str(port),
                             "--threads", "1"], stderr=subprocess.PIPE, text=True)
    try:
        _wait_port(port, proc, 20)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        stop(proc, signal.SIGKILL, 5)  # already gone unless something above failed
    assert f"rpc-server at 127.0.0.1:{port}" in err and "only this machine" in err
