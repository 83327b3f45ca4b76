"""Ollama's native API on serve's app over a stand-in engine: what an Ollama request becomes on
the engine's side (options, format, tools, history), the answers' shapes (whole, NDJSON, tool
calls with object arguments), keep_alive's forms, HEAD on every GET route, and hostile input
on the /api/ routes answered as Ollama does, `{"error": "..."}` with a request id, never a 5xx."""

from __future__ import annotations

import json

import pytest

from edgepick.serve.errors import BadRequest
from edgepick.serve.http.ollama.keep_alive import parse
from edgepick.serve.router_api import ServedResponse
from fake_edge import FakePool, FakeSpec, chat_body, make_app, raw_exchange

KEY = "ollama-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
POOL = FakePool(FakeSpec())
POOL.embedder = FakePool(FakeSpec(name="fake-embed"))
APP, _ = make_app({"api_key": KEY, "max_tokens": 64}, pool=POOL)
CHAT = {"model": "fake-model", "messages": [{"role": "user", "content": "Say hi."}]}


@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    with TestClient(APP, raise_server_exceptions=False) as c:
        yield c


def _seen(client, path: str, body: dict) -> dict:
    POOL.seen.clear()
    r = client.post(path, json=body, headers=AUTH)
    assert r.status_code == 200, r.text
    return POOL.seen[-1]


def test_options_format_and_tools_reach_the_engine_as_openai_fields(client):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    tools = [{"type": "function", "function": {"name": "add", "parameters": {
        "type": "object", "properties": {"x": {"type": "integer"}}}}}]
    seen = _seen(client, "/api/chat", dict(CHAT, stream=False, format=schema, tools=tools,
                                            options={"num_predict": 5, "temperature": 0,
                                                     "top_p": 0.9, "top_k": 7, "seed": 3,
                                                     "stop": ["\n"], "repeat_penalty": 1.1}))
    assert seen["max_tokens"] == 5 and seen["temperature"] == 0 and seen["top_p"] == 0.9
    assert seen["top_k"] == 7 and seen["seed"] == 3 and seen["stop"] == ["\n"]
    assert seen["repeat_penalty"] == 1.1 and seen["stream"] is False
    assert seen["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "format", "schema": schema}}
    assert seen["tools"] == tools
    assert _seen(client, "/api/chat", dict(CHAT, stream=False, format="json"))[
        "response_format"] == {"type": "json_object"}
    # generate applies the template: one user turn (and the system one); raw does not
    seen = _seen(client, "/api/generate", {"model": "fake-model", "prompt": "Hi", "stream": False,
                                           "system": "Be brief."})
    assert seen["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Hi"}]
    seen = _seen(client, "/api/generate", {"model": "fake-model", "prompt": "Hi", "raw": True,
                                           "stream": False, "format": "json"})
    assert seen["prompt"] == "Hi" and seen["json_schema"] == {"type": "object"}


def test_tool_history_gets_openai_ids(client):
    seen = _seen(client, "/api/chat", {"model": "fake-model", "stream": False, "messages": [
        {"role": "user", "content": "Add 2 and 3."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "add", "arguments": {"a": 2, "b": 3}}}]},
        {"role": "tool", "content": "5", "tool_name": "add"}]})
    call = seen["messages"][1]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"a": 2, "b": 3}
    assert seen["messages"][2]["tool_call_id"] == call["id"]


def test_whole_and_streamed_answers_in_ollama_shape(client):
    r = client.post("/api/chat", json=dict(CHAT, stream=False), headers=AUTH)
    out = r.json()
    assert out["message"] == {"role": "assistant", "content": "Hi there."} and out["done"] is True
    assert out["done_reason"] == "stop" and out["eval_count"] == 2
    assert out["prompt_eval_count"] == 3 and out["total_duration"] > 0
    assert out["created_at"].endswith("Z")
    r = client.post("/api/generate", json={"model": "fake-model", "prompt": "Hi"}, headers=AUTH)
    assert r.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(x) for x in r.text.splitlines()]
    assert "".join(x["response"] for x in lines) == "Hi there."
    assert [x["done"] for x in lines] == [False] * (len(lines) - 1) + [True]
    assert lines[-1]["eval_count"] == 2 and lines[-1]["done_reason"] == "stop"


def test_tool_calls_have_object_arguments(client, monkeypatch):
    body = chat_body("")
    body["choices"][0].update(finish_reason="tool_calls", message={
        "role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}]})

    async def forward(kind, req, stream, deadline):
        return ServedResponse(body=body)

    monkeypatch.setattr(POOL, "forward", forward)
    out = client.post("/api/chat", json=dict(CHAT, stream=False), headers=AUTH).json()
    call = out["message"]["tool_calls"][0]
    assert call["function"]["name"] == "add" and call["function"]["arguments"] == {"a": 2, "b": 3}
    assert out["done_reason"] == "stop"


@pytest.mark.parametrize("value, seconds", [
    (0, 0.0), ("0", 0.0), (-1, None), ("-1", None), ("-1m", None), ("5m", 300.0),
    ("1h30m", 5400.0), ("1.5s", 1.5), (300, 300.0), ("300", 300.0), ("250ms", 0.25)])
def test_keep_alive_forms(value, seconds):
    assert parse(value).seconds == seconds


@pytest.mark.parametrize("value", ["five minutes", "5x", True, [], "", "m"])
def test_keep_alive_nonsense_is_a_400(value):
    with pytest.raises(BadRequest, match="keep_alive"):
        parse(value)


def _routes(routes) -> list:
    out = []
    for route in routes:
        inner = getattr(route, "original_router", None)  # an included router
        out.extend(_routes(inner.routes) if inner is not None else [route])
    return out


def _get_paths() -> list[str]:
    """Every GET route the app has, its path parameter filled in."""
    return [r.path.replace("{model_id:path}", "fake-model") for r in _routes(APP.routes)
            if "GET" in (getattr(r, "methods", None) or ())]


def test_head_answers_every_get_route_like_its_get(client):
    paths = _get_paths()
    assert {"/health", "/metrics", "/api/tags", "/api/ps", "/api/version", "/ui",
            "/ui/status", "/v1/models"} <= set(paths)
    for path in paths:
        for headers in (AUTH, {}):
            got, head = client.get(path, headers=headers), client.head(path, headers=headers)
            assert head.status_code == got.status_code, path
            assert head.content == b"", path
            assert head.headers["content-type"] == got.headers["content-type"], path
            assert head.headers["x-request-id"], path
            if path not in ("/metrics", "/metrics/history", "/ui/status", "/api/ps"):
                assert head.headers["content-length"] == got.headers["content-length"], path


def test_head_on_a_post_route_is_a_405_naming_head(client):
    r = client.head("/v1/chat/completions", headers=AUTH)
    assert r.status_code == 405 and r.headers["x-request-id"]


# Hostile input on the Ollama routes: every answer a 4xx, `{"error": str}` and nothing else,
# JSON, with a request id.
HOSTILE = [
    ("/api/chat", b"{", "application/json"),
    ("/api/chat", b"[]", "application/json"),
    ("/api/chat", b'{"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}',
     "text/plain"),
    ("/api/chat", b'{"model": "fake-model", "messages": [{"role": "user", "content": NaN}]}',
     "application/json"),
    ("/api/chat", b'{"model": "fake-model", "messages": [{"\\ud800": 1}]}', "application/json"),
    ("/api/chat", json.dumps({"model": "fake-model", "messages": "hi"}).encode(),
     "application/json"),
    ("/api/chat", json.dumps({"model": "fake-model", "messages": [1]}).encode(),
     "application/json"),
    ("/api/chat", json.dumps({"model": "fake-model", "messages": [{"role": "wizard",
                                                                  "content": "x"}]}).encode(),
     "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, images=None, messages=[
        {"role": "user", "content": "x", "images": ["aGk="]}])).encode(), "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, stream="yes")).encode(), "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, options=[1])).encode(), "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, options={"num_predict": "many"})).encode(),
     "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, options={"num_predict": 10**9})).encode(),
     "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, options={"num_ctx": 10**9})).encode(),
     "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, options={"temperature": "hot"})).encode(),
     "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, options={"warp": 9})).encode(), "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, options={"use_mlock": True})).encode(),
     "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, format="yaml")).encode(), "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, format={"type": "object", "minProperties": 10**9}))
     .encode(), "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, tools="add")).encode(), "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, keep_alive="forever")).encode(), "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, think=True)).encode(), "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, model="")).encode(), "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, model="llama3:8b")).encode(), "application/json"),
    ("/api/chat", json.dumps(dict(CHAT, model=["x"])).encode(), "application/json"),
    ("/api/generate", json.dumps({"model": "fake-model", "prompt": 5}).encode(),
     "application/json"),
    ("/api/generate", json.dumps({"model": "fake-model", "prompt": "x", "suffix": "y"}).encode(),
     "application/json"),
    ("/api/generate", json.dumps({"model": "fake-model", "prompt": "x", "context": [1]})
     .encode(), "application/json"),
    ("/api/generate", json.dumps({"model": "fake-model", "prompt": "x", "raw": "no"}).encode(),
     "application/json"),
    ("/api/generate", json.dumps({"model": "fake-model", "prompt": "x " * 600}).encode(),
     "application/json"),
    ("/api/generate", json.dumps({"model": "fake-embed", "prompt": "x"}).encode(),
     "application/json"),
    ("/api/embed", json.dumps({"model": "fake-model", "input": "x"}).encode(),
     "application/json"),
    ("/api/embed", json.dumps({"model": "fake-embed", "input": [1.5]}).encode(),
     "application/json"),
    ("/api/embed", json.dumps({"input": "x"}).encode(), "application/json"),
    ("/api/embed", json.dumps({"model": "fake-embed", "input": "x", "options": {"a": 1}})
     .encode(), "application/json"),
    ("/api/embeddings", json.dumps({"model": "fake-embed", "prompt": ["x"]}).encode(),
     "application/json"),
    ("/api/embeddings", json.dumps({"model": "fake-model", "prompt": "x"}).encode(),
     "application/json"),
    ("/api/show", json.dumps({"model": "nope"}).encode(), "application/json"),
    ("/api/show", json.dumps({}).encode(), "application/json"),
    ("/api/pull", json.dumps({"model": "llama3"}).encode(), "application/json"),
    ("/api/nothing", b"{}", "application/json"),
]


@pytest.mark.parametrize("path, raw, ctype", HOSTILE)
def test_hostile_input_on_ollama_routes_is_an_ollama_shaped_4xx(client, path, raw, ctype):
    r = client.post(path, content=raw, headers=dict(AUTH, **{"Content-Type": ctype}))
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    assert r.headers["x-request-id"]
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert list(body) == ["error"] and isinstance(body["error"], str) and body["error"], body
    assert "Traceback" not in r.text


@pytest.mark.parametrize("method, path", [("GET", "/api/chat"), ("GET", "/api/tags"),
                                          ("POST", "/api/chat"), ("HEAD", "/api/ps"),
                                          ("DELETE", "/api/delete")])
def test_without_the_key_or_with_a_wrong_method_ollama_shaped(client, method, path):
    r = client.request(method, path)
    assert r.status_code in (401, 404, 405), r.text
    assert r.headers["x-request-id"]
    if method != "HEAD":
        assert list(r.json()) == ["error"]


def test_a_bug_on_an_ollama_route_is_a_500_in_ollama_shape(client, monkeypatch):
    async def broken(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(POOL, "forward", broken)
    r = client.post("/api/chat", json=dict(CHAT, stream=False), headers=AUTH)
    assert r.status_code == 500 and list(r.json()) == ["error"] and r.headers["x-request-id"]


def test_the_status_page_holds_no_data_and_its_status_needs_the_key(client):
    page = client.get("/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "connect-src 'self'" in page.headers["content-security-policy"]
    assert KEY not in page.text and "http://" not in page.text and "https://" not in page.text
    assert client.get("/ui/status").status_code == 401
    status = client.get("/ui/status", headers=AUTH).json()
    assert {"models", "memory", "figures", "window", "routes", "escalations", "events",
            "alerts"} <= set(status)
    assert status["window"]["asked_s"] == 300
    assert [m["name"] for m in status["models"]] == ["fake-model", "fake-embed"]
    assert any(r["figure"] == "TTFT P99" for r in status["figures"])


@pytest.fixture(scope="module")
def port():
    from fake_edge import running

    with running(APP) as p:
        yield p


@pytest.mark.parametrize("garbage", [
    b"POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    b"POST /api/generate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\nxx",
    b"GET /api/tags HTTP/1.1\r\nHost: x\x00y\r\n\r\n",
    b"HEAD /api/ps HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
])
def test_malformed_http_on_ollama_paths_is_refused_in_ollama_shape(port, garbage):
    head, _, body = raw_exchange(port, garbage).partition(b"\r\n\r\n")
    assert head.split()[1] == b"400" and b"x-request-id: " in head.lower()
    if not garbage.startswith(b"HEAD"):
        assert list(json.loads(body)) == ["error"], body
