"""Issue 35 against the real llama-server: the grammar bomb is refused before the engine (with
and without --mem-limit) and the engine serves on; a required tool call comes back as one; and
once the restart budget is spent every endpoint that needs an engine answers 503 at once."""

from __future__ import annotations

import os
import signal
import time

import httpx
import pytest

from serve_harness import chat_and_embedding_deploy, serve, wait_until

KEY = "attack-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
LIMIT = 1 << 30
BOMB = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4,
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
            "type": "string", "minLength": 10, "maxLength": 2}}}}


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve_attack")
    path = chat_and_embedding_deploy(tmp, "tiny-chat", tiny_model, tiny_model)
    with serve([str(path), "--slots", "1", "--api-key", KEY, "--threads", "1",
                "--mem-limit", str(LIMIT), "--max-restarts", "1", "--probe-timeout", "2",
                "--hung-after", "5"], tmp) as s:
        yield s


def bomb_is_refused_and_the_engine_serves_on(s, limit: float | None, key: str = KEY) -> None:
    """Shared with test_serve_api.py (a server without --mem-limit)."""
    auth = {"Authorization": f"Bearer {key}"}
    for path, body in (("/v1/chat/completions", BOMB),
                       ("/v1/completions", {"prompt": "Hi", "max_tokens": 4,
                                            "json_schema": BOMB["response_format"][
                                                "json_schema"]["schema"]})):
        t0 = time.monotonic()
        r = httpx.post(s.v1 + path[3:], json=body, headers=auth, timeout=30)
        assert r.status_code == 400 and time.monotonic() - t0 < 5, r.text
        assert r.json()["error"]["param"].endswith("minLength") and r.headers["x-request-id"]
    memory = s.metric("edgepick_engine_memory_bytes", key)
    assert 0 < memory < (limit or 2 << 30)
    r = httpx.post(s.v1 + "/chat/completions", headers=auth, timeout=60, json={
        "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})
    assert r.status_code == 200 and s.healthy()


def test_the_bomb_never_reaches_the_engine(server):
    bomb_is_refused_and_the_engine_serves_on(server, LIMIT)
    assert server.metric("edgepick_engine_peak_memory_bytes", KEY) < LIMIT


def test_a_required_tool_call_comes_back_as_one(server):
    tool = {"type": "function", "function": {"name": "ping", "parameters": {
        "type": "object", "properties": {}, "additionalProperties": False}}}
    for stream in (False, True):
        body = {"messages": [{"role": "user", "content": "Ping."}], "tools": [tool],
                "tool_choice": "required", "max_tokens": 400, "stream": stream}
        r = httpx.post(server.v1 + "/chat/completions", json=body, headers=AUTH, timeout=60)
        assert r.status_code == 200, r.text
        if stream:
            assert '"tool_calls"' in r.text and '"ping"' in r.text and "[DONE]" in r.text
        else:
            (choice,) = r.json()["choices"]
            assert choice["finish_reason"] == "tool_calls"
            assert choice["message"]["tool_calls"][0]["function"]["name"] == "ping"


def _kill_until_failed(server, role: str) -> None:
    status = "failed"
    for _ in range(2):  # the first death spends the one restart, the second is final
        pids = [p for p in server.engine_pids() if _role(p) == role]
        if not pids:
            break
        os.kill(pids[0], signal.SIGKILL)
        wait_until(f"{role} engine dead", lambda: pids[0] not in server.engine_pids(), 30)
        wait_until(f"{role} engine back or failed", lambda: _state(server, role) in (
            "ready", status), 60)
    assert _state(server, role) == status


def _role(pid: int) -> str:
    import psutil

    return "embedding" if "--embeddings" in psutil.Process(pid).cmdline() else "chat"


def _state(server, role: str) -> str:
    h = httpx.get(server.url + "/health/ready", timeout=10).json()
    return (h.get("embeddings") or {}).get("status", "") if role == "embedding" else h["status"]


def test_after_the_restart_budget_every_engine_endpoint_fails_fast(server):
    _kill_until_failed(server, "chat")
    _kill_until_failed(server, "embedding")
    calls = [("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}]}),
             ("/v1/completions", {"prompt": "Hi", "max_tokens": 4}),
             ("/v1/embeddings", {"input": "Hi"}),
             ("/tokenize", {"prompt": "Hi"}),
             ("/detokenize", {"tokens": [1, 2]})]
    for path, body in calls:
        t0 = time.monotonic()
        r = httpx.post(server.url + path, json=body, headers=AUTH, timeout=30)
        assert time.monotonic() - t0 < 1.0, path
        assert r.status_code == 503 and int(r.headers["retry-after"]) >= 1, (path, r.text)
        assert r.json()["error"]["code"] == "engine_unavailable" and r.headers["x-request-id"]
