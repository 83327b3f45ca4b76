"""`edgepick eval` with the reference behind an OpenAI-compatible endpoint (llama.cpp's
llama-server, started here on a free loopback port with the tiny model, and always stopped)."""

from __future__ import annotations

import json
import socket
import subprocess
import time

import httpx
import pytest

from edgepick.cli.cmd_eval import demo_eval_path
from edgepick.errors import EdgepickError


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def endpoint(tiny_model, tmp_path_factory):
    from edgepick.llama_tools import tool_path

    try:
        exe = tool_path("llama-server")
    except EdgepickError as exc:
        pytest.skip(str(exc))
    port = _free_port()
    log = open(tmp_path_factory.mktemp("server") / "llama-server.log", "w")
    proc = subprocess.Popen([exe, "-m", tiny_model, "--host", "127.0.0.1", "--port", str(port),
                             "-c", "1024", "-np", "1", "-t", "1", "--alias", "tiny-remote"],
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"llama-server exited with {proc.returncode}"
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "llama-server did not become ready"
            time.sleep(0.2)
        yield f"{base}/v1#tiny-remote"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_eval_against_an_http_reference(cli, endpoint, store_path):
    args = ["eval", "-m", "tiny", "-r", endpoint, "--data", demo_eval_path(), "--limit", "4",
            "--store", store_path, "--threads", "1", "--ctx", "512", "--json"]
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    ref = res["reference"]
    assert ref["candidate"]["backend"] == "openai_http" and ref["name"] == "tiny-remote"
    assert ref["generated"] == 4
    outs = [b["reference_output"] for b in res["candidates"][0]["badcases"]]
    assert all(isinstance(o, str) for o in outs)
    again = json.loads(cli(*args).stdout)
    assert again["reference"]["generated"] == 0 and again["reference"]["reused"] == 4
    assert again["candidates"][0]["per_task"] == res["candidates"][0]["per_task"]


def test_unreachable_endpoint_is_one_line(cli, store_path):
    r = cli("eval", "-m", "tiny", "-r", f"http://127.0.0.1:{_free_port()}/v1#nobody",
            "--data", demo_eval_path(), "--limit", "1", "--store", store_path, "--threads", "1")
    assert r.returncode == 2
    assert "cannot reach the server" in r.stderr and "Traceback" not in r.stderr
