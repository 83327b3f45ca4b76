"""serve's HTTP surface on a stand-in engine (tests/fake_edge.py): one OpenAI error shape for
every status, request validation (issue 25's bad inputs, each a 4xx with one clear message),
CORS, request ids, /v1/models/{id}, /v1/embeddings, /openapi.json, stream_options, and
deploy.yaml's sampling defaults and lock."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest
from parts import need_module
from fastapi.testclient import TestClient

from fake_edge import FakePool, FakeSpec, make_app, running

from edgepick.serve.errors import (DeadlineExceeded, EngineUnavailable, Overloaded,
                                   ResourceRefused, UpstreamError)

KEY = "k-123"
AUTH = {"Authorization": f"Bearer {KEY}"}
MSG = [{"role": "user", "content": "Hello"}]


def shaped(r: httpx.Response, status: int, code: str | None = None) -> dict:
    """The response is `status` in OpenAI's error shape (string code); returns the error."""
    assert r.status_code == status, (r.status_code, r.text)
    err = r.json()["error"]
    assert set(err) >= {"message", "type", "param", "code"}, err
    assert isinstance(err["code"], str) and isinstance(err["message"], str) and err["message"]
    assert "Traceback" not in err["message"]
    if code is not None:
        assert err["code"] == code, err
    assert r.headers["x-request-id"]
    return err


@pytest.fixture
def client():
    app, pool = make_app({"api_key": KEY, "max_tokens": 64, "max_body": 64 * 1024})
    with TestClient(app) as c:
        c.pool = pool
        yield c


def chat(c, body: dict | None = None, **extra) -> httpx.Response:
    return c.post("/v1/chat/completions", json=body if body is not None else
                  {"model": "x", "messages": MSG, **extra}, headers=AUTH)


def test_framework_answers_in_the_openai_shape(client):
    shaped(client.get("/v2/nothing", headers=AUTH), 404, "unknown_url")
    err = shaped(client.get("/v1/chat/completions", headers=AUTH), 405, "method_not_allowed")
    assert "GET" in err["message"]
    shaped(client.options("/v1/chat/completions"), 405)  # no CORS configured: no preflight
    shaped(client.post("/v1/chat/completions", json={"messages": MSG}), 401, "invalid_api_key")
    shaped(client.get("/v1/models/other", headers=AUTH), 404, "model_not_found")
    assert client.get("/v1/models/fake-model", headers=AUTH).json()["id"] == "fake-model"
    assert client.get("/v1/models/fake-model@1", headers=AUTH).status_code == 200
    r = client.post("/v1/embeddings", json={"input": "hi"}, headers=AUTH)
    assert shaped(r, 501, "not_implemented")["type"] == "not_supported_error"
    big = {"messages": [{"role": "user", "content": "a" * 70000}]}
    shaped(chat(client, big), 413, "request_too_large")


@pytest.mark.parametrize("error, status, code", [
    (Overloaded("busy", retry_after=3), 429, "rate_limit_exceeded"),
    (ResourceRefused("low memory", retry_after=2), 503, "insufficient_resources"),
    (EngineUnavailable("restarting", retry_after=2), 503, "engine_unavailable"),
    (DeadlineExceeded("too slow"), 504, "deadline_exceeded"),
    # llama-server answers a JSON type error with 500: the client's fault, a 400
    (UpstreamError("engine: [json.exception.type_error.302] type must be string, but is "
                   "number", status=500), 400, "invalid_value"),
    (UpstreamError("engine: the request exceeds the available context size", status=400), 400,
     "context_length_exceeded"),
    (UpstreamError("engine: out of memory", status=500), 500, "internal_error"),
])
def test_engine_and_admission_errors_are_shaped(client, error, status, code):
    client.pool.fail_with = error
    r = chat(client)
    shaped(r, status, code)
    if status in (429, 503):
        assert int(r.headers["retry-after"]) >= 1
    assert r.json()["error"]["message"].startswith(("busy", "low", "restarting", "too", "engine"))


BAD_INPUTS = [  # issue 25's list: (body, the field the message must name)
    ({"messages": [{"content": "no role"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]},
     "messages[0].content[1].type"),
    ({"messages": MSG, "tools": "x"}, "tools"),
    ({"messages": MSG, "stream": "false"}, "stream"),
    ({"messages": MSG, "stream": "no"}, "stream"),
    ({"messages": MSG, "stream": "yes"}, "stream"),
    ({"messages": MSG, "temperature": 3}, "temperature"),
    ({"messages": MSG, "temperature": "0.5"}, "temperature"),
    ({"messages": MSG, "max_tokens": "8"}, "max_tokens"),
    ({"messages": MSG, "n": 0}, "n"),
    ({"messages": MSG, "top_p": -1}, "top_p"),
    ({"messages": MSG, "stop": 5}, "stop"),
    ({"messages": MSG, "response_format": {"type": "xml"}}, "response_format.type"),
    ({"messages": []}, "messages"),
    ({"messages": "hi"}, "messages"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({"messages": MSG, "tools": [{"type": "function"}]}, "tools[0].function"),
    ({"messages": MSG, "stream_options": {"include_usage": "yes"}},
     "stream_options.include_usage"),
    ({}, "messages"),
]


@pytest.mark.parametrize("body, param", BAD_INPUTS)
def test_bad_chat_input_is_a_400_naming_the_field(client, body, param):
    err = shaped(chat(client, body), 400)
    assert err["param"] == param, err
    assert param in err["message"]
    assert not client.pool.seen  # nothing reached the engine


def test_bad_json_is_bounded_before_it_can_break_anything(client):
    def raw(data: bytes) -> httpx.Response:
        return client.post("/v1/chat/completions", content=data,
                           headers=dict(AUTH, **{"content-type": "application/json"}))

    deep = b"[" * 10000 + b"]" * 10000
    assert "nests deeper" in shaped(raw(b'{"messages": ' + deep + b"}"), 400)["message"]
    shallow_but_deep = {"messages": MSG, "metadata": {}}
    node = shallow_but_deep["metadata"]
    for _ in range(100):  # under the parser's recursion limit, over edgepick's depth bound
        node["x"] = {}
        node = node["x"]
    assert "nests deeper" in shaped(chat(client, shallow_but_deep), 400)["message"]
    nan = b'{"messages": [{"role": "user", "content": "hi"}], "temperature": NaN}'
    assert "NaN" in shaped(raw(nan), 400, "invalid_json")["message"]
    shaped(raw(nan.replace(b"NaN", b"Infinity")), 400, "invalid_json")
    lone = b'{"messages": [{"role": "user", "content": "\\ud800"}]}'
    err = shaped(raw(lone), 400)
    assert err["param"] == "messages[0].content" and "surrogate" in err["message"]
    shaped(raw(b'{"messages": ['), 400, "invalid_json")
    shaped(raw(b"[1, 2]"), 400, "invalid_json")
    shaped(raw(b"\xff\xfe not utf-8"), 400, "invalid_json")
    shaped(client.post("/v1/completions", json={"prompt": [[1, -2]]}, headers=AUTH), 400)
    shaped(client.post("/v1/completions", json={"prompt": 5}, headers=AUTH), 400)
    assert not client.pool.seen


def test_valid_requests_pass_with_llama_server_extras(client):
    r = chat(client, top_k=40, repeat_penalty=1.1, min_p=0.05, seed=1, stop=["\n"],
             temperature=0, metadata={"task": "summary"},
             response_format={"type": "json_object"},
             tools=[{"type": "function", "function": {"name": "f", "parameters": {
                 "type": "object", "properties": {"a": {"type": "integer"}}}}}],
             tool_choice="auto")
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"]
    sent = client.pool.seen[-1]
    assert sent["top_k"] == 40 and sent["stream"] is False and "model" not in sent
    for prompt in ("Once", ["a", "b"], [1, 2, 3], [[1, 2], [3]]):
        r = client.post("/v1/completions", json={"prompt": prompt, "max_tokens": 4},
                        headers=AUTH)
        assert r.status_code == 200, (prompt, r.text)
    # lm-eval's loglikelihood request: echo, logprobs and nothing generated
    r = client.post("/v1/completions", json={"prompt": "a b", "max_tokens": 0, "echo": True,
                                             "logprobs": 1}, headers=AUTH)
    assert r.status_code == 200, r.text
    assert client.pool.seen[-1]["max_tokens"] == 0
    # echo without max_tokens: OpenAI's default of 16 for completions, not a 400
    r = client.post("/v1/completions", json={"prompt": "a b", "echo": True, "logprobs": 1},
                    headers=AUTH)
    assert r.status_code == 200, r.text
    assert client.pool.seen[-1]["max_tokens"] == 16


def test_stream_options_include_usage_is_honoured(client):
    def events(**extra) -> list[dict]:
        body = {"messages": MSG, "stream": True, **extra}
        with client.stream("POST", "/v1/chat/completions", json=body, headers=AUTH) as r:
            assert r.status_code == 200
            assert r.headers["x-request-id"]
            lines = [ln for ln in r.iter_lines() if ln.startswith("data: ")]
        assert lines[-1] == "data: [DONE]"
        return [json.loads(ln[6:]) for ln in lines[:-1]]

    without = events()
    assert without and not any("usage" in e for e in without)
    assert events(stream_options={"include_usage": False}) == without
    with_usage = events(stream_options={"include_usage": True})
    assert with_usage[-1]["usage"]["completion_tokens"] == 2 and with_usage[-1]["choices"] == []
    assert client.pool.seen[-1]["stream"] is True
    # edgepick counts the tokens either way
    text = client.get("/metrics", headers=AUTH).text
    assert 'edgepick_tokens_total{kind="completion"} 6.0' in text


def test_request_id_echoed_or_made(client, caplog):
    r = chat(client, None, **{})
    made = r.headers["x-request-id"]
    assert len(made) >= 16
    r = client.post("/v1/chat/completions", json={"messages": MSG},
                    headers=dict(AUTH, **{"x-request-id": "client-id-42"}))
    assert r.headers["x-request-id"] == "client-id-42"
    r = client.get("/nowhere", headers={"x-request-id": "bad id with spaces\t"})
    assert r.headers["x-request-id"] != "bad id with spaces\t"  # not echoed: a fresh one
    from edgepick.serve.http.middleware import RequestIdFilter

    client.pool.fail_with = RuntimeError("a bug")
    caplog.handler.addFilter(RequestIdFilter())  # as run_server does on its log handler
    with caplog.at_level("ERROR", logger="edgepick.serve"):
        r = client.post("/v1/chat/completions", json={"messages": MSG},
                        headers=dict(AUTH, **{"x-request-id": "trace-me"}))
    shaped(r, 500, "internal_error")
    rec = next(r for r in caplog.records if r.getMessage() == "request failed")
    assert rec.request_id == "trace-me"


def test_openapi_describes_the_real_models(client):
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for name in ("ChatCompletionRequest", "CompletionRequest", "ChatCompletion", "Completion",
                 "ErrorResponse", "ModelList", "EmbeddingRequest"):
        assert name in schemas, name
    post = doc["paths"]["/v1/chat/completions"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ChatCompletionRequest")
    assert {"200", "400", "401", "429", "503", "504"} <= set(post["responses"])
    assert "/metrics" not in doc["paths"]
    assert schemas["ChatCompletionRequest"]["properties"]["stream"]["type"] == "boolean"


def test_cors_preflight_and_auth_still_required():
    app, _ = make_app({"api_key": KEY, "cors_origin": ["http://localhost:3000"]})
    with TestClient(app) as c:
        pre = c.options("/v1/chat/completions", headers={
            "Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        assert pre.status_code == 200
        assert pre.headers["access-control-allow-origin"] == "http://localhost:3000"
        assert "POST" in pre.headers["access-control-allow-methods"]
        assert "authorization" in pre.headers["access-control-allow-headers"].lower()
        other = c.options("/v1/chat/completions", headers={
            "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
        assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
        no_key = c.post("/v1/chat/completions", json={"messages": MSG},
                        headers={"Origin": "http://localhost:3000"})
        shaped(no_key, 401)
        assert no_key.headers["access-control-allow-origin"] == "http://localhost:3000"
        ok = c.post("/v1/chat/completions", json={"messages": MSG},
                    headers=dict(AUTH, Origin="http://localhost:3000"))
        assert ok.status_code == 200
        assert "x-request-id" in ok.headers["access-control-expose-headers"].lower()
    app, _ = make_app({"cors_origin": ["*"]})
    with TestClient(app) as c:
        pre = c.options("/v1/models", headers={"Origin": "http://any.example",
                                               "Access-Control-Request-Method": "GET"})
        assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == "*"


def test_deploy_sampling_defaults_and_lock():
    from edgepick.records.deploy import DeployConfig, DeployModel

    model = DeployModel(name="m", path="/m.gguf", sha256="0")
    sampling = {"temperature": 0.7, "top_p": 0.9, "repeat_penalty": 1.1, "seed": 7}
    free = DeployConfig(model=model, sampling=sampling)
    app, pool = make_app(deploy=free)
    with TestClient(app) as c:
        c.post("/v1/chat/completions", json={"messages": MSG})
        assert {k: pool.seen[-1][k] for k in sampling} == sampling  # defaults fill in
        r = c.post("/v1/chat/completions", json={"messages": MSG, "temperature": 0})
        assert pool.seen[-1]["temperature"] == 0 and "x-edgepick-sampling" not in r.headers
    locked = free.model_copy(update={"lock_sampling": True})
    app, pool = make_app(deploy=locked)
    with TestClient(app) as c:
        r = c.post("/v1/chat/completions", json={"messages": MSG, "temperature": 0,
                                                 "top_p": 0.9, "seed": 1})
        assert r.status_code == 200
        assert {k: pool.seen[-1][k] for k in sampling} == sampling  # the client cannot override
        assert r.headers["x-edgepick-sampling"] == "locked:temperature,seed"
    app, pool = make_app(deploy=DeployConfig(model=model))  # no sampling: the client's own
    with TestClient(app) as c:
        c.post("/v1/chat/completions", json={"messages": MSG, "temperature": 1.5})
        assert pool.seen[-1]["temperature"] == 1.5 and "top_p" not in pool.seen[-1]


def test_embeddings_when_the_engine_has_them():
    app, pool = make_app(pool=FakePool(FakeSpec(embeddings=True)))
    with TestClient(app) as c:
        r = c.post("/v1/embeddings", json={"input": "hello", "model": "x"})
        assert r.status_code == 200 and r.json()["data"][0]["embedding"]
        shaped(c.post("/v1/embeddings", json={"input": 5}), 400)


# -- the wire: what only a real HTTP parser shows -------------------------------------------
def _send(port: int, data: bytes, read: bool = True, timeout: float = 10) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        if not read:
            return b""
        out = b""
        while True:
            try:
                piece = s.recv(65536)
            except socket.timeout:
                break
            if not piece:
                break
            out += piece
        return out


def test_short_body_times_out_and_a_client_gone_mid_body_is_499():
    app, pool = make_app({"body_timeout": 0.5})
    with running(app) as port:
        head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                b"application/json\r\nConnection: close\r\nContent-Length: 500\r\n\r\n")
        t0 = time.monotonic()
        answer = _send(port, head + b'{"messages": [')
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b'"request_timeout"' in answer and time.monotonic() - t0 < 8
        _send(port, head + b'{"messages": [', read=False)  # and the client leaves
        metrics = pool.metrics

        def gone() -> float:
            return metrics.registry.get_sample_value(
                "edgepick_requests_total", {"endpoint": "/v1/chat/completions",
                                            "status": "499"}) or 0.0

        end = time.monotonic() + 10
        while gone() < 1:
            assert time.monotonic() < end, "the disconnect was not counted as 499"
            time.sleep(0.05)
        assert not pool.seen


def test_header_count_and_size_are_limited():
    app, _ = make_app()
    with running(app) as port:
        many = b"".join(b"X-H%d: v\r\n" % i for i in range(5000))
        answer = _send(port, b"GET /health HTTP/1.1\r\nHost: x\r\n" + many +
                       b"Connection: close\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
        assert b'"request_header_fields_too_large"' in answer
        huge = b"X-Big: " + b"a" * 100_000 + b"\r\n"
        answer = _send(port, b"GET /health HTTP/1.1\r\nHost: x\r\n" + huge +
                       b"Connection: close\r\n\r\n")
        assert answer.split(b"\r\n")[0] in (b"HTTP/1.1 431 Request Header Fields Too Large",
                                            b"HTTP/1.1 400 Bad Request"), answer[:200]
        ok = _send(port, b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert ok.startswith(b"HTTP/1.1 200")


def test_openai_and_langchain_clients_on_the_wire():
    """The real clients' own requests pass validation and their parsers read the answers and
    errors (the same against a real engine: test_serve_clients.py)."""
    import openai

    app, pool = make_app({"api_key": KEY, "max_tokens": 64})
    with running(app) as port:
        base = f"http://127.0.0.1:{port}/v1"
        client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, timeout=30)
        out = client.chat.completions.create(model="x", messages=MSG, max_tokens=8)
        assert out.choices[0].message.content == "Hi there." and out._request_id
        chunks = list(client.chat.completions.create(
            model="x", messages=MSG, stream=True, stream_options={"include_usage": True}))
        assert chunks[-1].usage.completion_tokens == 2
        assert client.models.retrieve("fake-model").id == "fake-model"
        with pytest.raises(openai.BadRequestError) as exc:
            client.chat.completions.create(model="x", messages=MSG, top_p=3)
        assert exc.value.code == "invalid_value" and exc.value.param == "top_p"
        lc = need_module("langchain_openai")
        llm = lc.ChatOpenAI(base_url=base, api_key=KEY, model="x", max_tokens=8, max_retries=0,
                            timeout=30)
        assert llm.invoke("Hello").content == "Hi there."
        assert "".join(p.content for p in llm.stream("Hello")) == "Hi there."
        sent = pool.seen[-1]
        assert sent["stream"] is True and sent["max_tokens"] == 8
