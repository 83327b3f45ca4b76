"""`edgepick node rpc`: llama.cpp's rpc-server on 127.0.0.1 unless an address is named, and a
plain warning when one is (the server itself is replaced by a stand-in: nothing binds)."""

from __future__ import annotations

from typer.testing import CliRunner

from edgepick.cli import node_rpc
from edgepick.cli.app import app


class _Done:
    returncode = 0

    def wait(self, *a):
        return 0


def test_loopback_is_the_default_and_says_so(monkeypatch):
    started = []
    monkeypatch.setattr(node_rpc, "start", lambda argv: started.append(argv) or _Done())
    r = CliRunner().invoke(app, ["node", "rpc", "--threads", "2"])
    assert r.exit_code == 0, r.output
    assert started[0][1:] == ["-H", "127.0.0.1", "-p", "50052", "-t", "2"]
    assert "only this machine" in " ".join(r.output.split())


def test_naming_an_address_warns_what_it_exposes(monkeypatch):
    started = []
    monkeypatch.setattr(node_rpc, "start", lambda argv: started.append(argv) or _Done())
    r = CliRunner().invoke(app, ["node", "rpc", "--host", "192.168.1.20", "--port", "50100"])
    assert r.exit_code == 0, r.output
    assert started[0][1:] == ["-H", "192.168.1.20", "-p", "50100"]
    said = " ".join(r.output.split())
    assert "no authentication" in said and "192.168.1.20:50100" in said
