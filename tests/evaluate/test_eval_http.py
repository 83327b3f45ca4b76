"""`edgepick eval` with the reference behind an OpenAI-compatible endpoint (llama.cpp's
llama-server, started here on a free loopback port with the tiny model, and always stopped)."""

from __future__ import annotations

import json

import pytest
from llama_server import free_port, llama_server

from edgepick.cli.cmd_eval import demo_eval_path


@pytest.fixture(scope="module")
def endpoint(tiny_model, tmp_path_factory):
    with llama_server(tiny_model, "tiny-remote", tmp_path_factory.mktemp("server"), parallel=1) as url:
        yield url


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
    r = cli("eval", "-m", "tiny", "-r", f"http://127.0.0.1:{free_port()}/v1#nobody",
            "--data", demo_eval_path(), "--limit", "1", "--store", store_path, "--threads", "1")
    assert r.returncode == 2
    assert "cannot reach the server" in r.stderr and "Traceback" not in r.stderr
