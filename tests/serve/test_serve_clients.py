"""Real clients, unchanged, against `edgepick serve` on a real engine (issue 25's done-when): the
official `openai` client and LangChain's `ChatOpenAI`, their answers, streams with and without
usage, `models.retrieve`, the request id they report, and the errors they raise, each with
OpenAI's string code and the field it is about."""

from __future__ import annotations

import httpx
import openai
import pytest
from parts import need_module

from serve_harness import module_server

KEY = "clients-key"
MSG = [{"role": "user", "content": "Say hello."}]


server, client = module_server("serve_clients", "--slots", "2", "--queue", "2",
                               "--max-tokens", "32", "--ctx", "512", "--threads", "1",
                               "--cors-origin", "http://localhost:5173", key=KEY)


def test_openai_client_answers_streams_and_models(client, server):
    out = client.chat.completions.create(model="x", max_tokens=8, messages=MSG)
    assert out.choices[0].message.content and out.usage.completion_tokens >= 1
    assert out._request_id  # the client reads x-request-id from every answer
    raw = client.chat.completions.with_raw_response.create(
        model="x", max_tokens=4, messages=MSG, extra_headers={"x-request-id": "mine-1"})
    assert raw.headers["x-request-id"] == "mine-1"
    chunks = list(client.chat.completions.create(model="x", max_tokens=8, messages=MSG,
                                                 stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert all(c.usage is None for c in chunks)  # not asked for: not sent
    chunks = list(client.chat.completions.create(model="x", max_tokens=8, messages=MSG,
                                                 stream=True,
                                                 stream_options={"include_usage": True}))
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens >= 1
    comp = list(client.completions.create(model="x", prompt="Once upon", max_tokens=6,
                                          stream=True))
    assert "".join(c.choices[0].text for c in comp if c.choices)
    served = client.models.list().data[0].id
    assert client.models.retrieve(served).id == served


def test_openai_client_echo_without_max_tokens(client):
    # the client sends no max_tokens: OpenAI's default of 16, the prompt echoed with its scores
    out = client.completions.create(model="x", prompt="Once upon a time", echo=True, logprobs=1)
    (choice,) = out.choices
    assert "Once upon a time" in choice.text and 1 <= out.usage.completion_tokens <= 16
    assert len(choice.logprobs.tokens) == out.usage.prompt_tokens + out.usage.completion_tokens


def test_openai_client_errors_carry_openai_codes(client, server):
    with pytest.raises(openai.BadRequestError) as exc:
        client.chat.completions.create(model="x", max_tokens=8, messages=MSG, temperature=5)
    assert exc.value.code == "invalid_value" and exc.value.param == "temperature"
    with pytest.raises(openai.BadRequestError) as exc:
        client.chat.completions.create(model="x", max_tokens=8,
                                       messages=[{"content": "no role"}])  # type: ignore[list-item]
    assert exc.value.code == "missing_required_parameter"
    assert exc.value.param == "messages[0].role"
    with pytest.raises(openai.BadRequestError) as exc:
        client.chat.completions.create(model="x", max_tokens=99, messages=MSG)
    assert exc.value.param == "max_tokens" and "--max-tokens" in exc.value.message
    with pytest.raises(openai.BadRequestError) as exc:  # an image part: this model reads none
        client.chat.completions.create(model="x", max_tokens=8, messages=[{
            "role": "user", "content": [
                {"type": "text", "text": "what is it?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}])
    assert exc.value.code == "unsupported_content"
    with pytest.raises(openai.NotFoundError) as exc:
        client.models.retrieve("some-other-model")
    assert exc.value.code == "model_not_found"
    anon = server.openai("wrong", timeout=30)
    with pytest.raises(openai.AuthenticationError) as exc:
        anon.chat.completions.create(model="x", messages=MSG)
    assert exc.value.code == "invalid_api_key"
    for r in (httpx.get(server.url + "/nope", timeout=10),
              httpx.get(server.v1 + "/chat/completions", timeout=10),
              httpx.post(server.v1 + "/embeddings", json={"input": "hi"}, timeout=10,
                         headers={"Authorization": f"Bearer {KEY}"})):
        err = r.json()["error"]
        assert r.status_code in (404, 405, 501) and isinstance(err["code"], str)
        assert set(err) == {"message", "type", "param", "code"}


def test_bad_inputs_never_reach_the_engine_as_a_5xx(server):
    """Issue 25's eight 5xx cases, now each a 400 with one clear message."""
    h = {"Authorization": f"Bearer {KEY}", "content-type": "application/json"}
    url = server.v1 + "/chat/completions"
    bodies = [b'{"messages": [{"content": "x"}]}',
              b'{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": '
              b'{"url": "http://x/y.png"}}]}]}',
              b'{"messages": [{"role": "user", "content": "x"}], "tools": "x"}',
              b'{"messages": ' + b"[" * 10000 + b"]" * 10000 + b"}",
              b'{"messages": [{"role": "user", "content": "x"}], "temperature": NaN}',
              b'{"messages": [{"role": "user", "content": "\\ud800"}]}',
              b'{"messages": [{"role": "user", "content": "x"}], "stream": "false"}']
    for body in bodies:
        r = httpx.post(url, content=body, headers=h, timeout=30)
        assert r.status_code == 400, (body[:60], r.text)
        err = r.json()["error"]
        assert err["message"] and "\n" not in err["message"] and "Traceback" not in err["message"]
    assert server.metric("edgepick_requests_total", KEY, status="500") == 0
    assert "Traceback" not in server.log.read_text()


def test_cors_on_the_real_server(server):
    pre = httpx.options(server.v1 + "/chat/completions", timeout=10, headers={
        "Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type"})
    assert pre.status_code == 200
    assert pre.headers["access-control-allow-origin"] == "http://localhost:5173"
    r = httpx.post(server.v1 + "/chat/completions", timeout=30, json={"messages": MSG},
                   headers={"Origin": "http://localhost:5173"})
    assert r.status_code == 401  # the key is still required after the preflight


def test_langchain_chat_openai_unchanged(server):
    lc = need_module("langchain_openai")  # pinned in the `test` extra
    llm = lc.ChatOpenAI(base_url=server.v1, api_key=KEY, model="anything", max_tokens=8,
                        temperature=0, max_retries=0, timeout=60)
    msg = llm.invoke("Say hello.")
    assert isinstance(msg.content, str) and msg.content
    assert msg.usage_metadata and msg.usage_metadata["output_tokens"] >= 1
    pieces = list(llm.stream("Count to three."))
    assert "".join(p.content for p in pieces)
    streamed_usage = lc.ChatOpenAI(base_url=server.v1, api_key=KEY, model="x", max_tokens=8,
                                   max_retries=0, timeout=60, stream_usage=True)
    last = None
    for last_piece in streamed_usage.stream("Hi"):
        last = last_piece if last is None else last + last_piece
    assert last is not None and last.usage_metadata["output_tokens"] >= 1
    bad = lc.ChatOpenAI(base_url=server.v1, api_key=KEY, model="x", max_tokens=8,
                        temperature=7, max_retries=0, timeout=60)
    with pytest.raises(openai.BadRequestError) as exc:
        bad.invoke("Hi")
    assert exc.value.code == "invalid_value" and exc.value.param == "temperature"


def test_tokenizer_endpoints_refuse_ids_outside_the_vocabulary(server):
    # llama-server answers them with a 500; edgepick checks against the model's vocabulary
    auth = {"Authorization": f"Bearer {KEY}"}
    r = httpx.post(server.url + "/detokenize", json={"tokens": [1, 10 ** 6]}, headers=auth,
                   timeout=30)
    assert r.status_code == 400 and r.json()["error"]["param"] == "tokens", r.text
    ids = httpx.post(server.url + "/tokenize", json={"prompt": "Hello there"}, headers=auth,
                     timeout=30).json()["tokens"]
    r = httpx.post(server.url + "/detokenize", json={"tokens": ids}, headers=auth, timeout=30)
    assert r.status_code == 200 and "Hello there" in r.json()["prompt"]
