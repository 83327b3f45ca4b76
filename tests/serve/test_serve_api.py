"""`edgepick serve` through the official openai client: chat and completions, sync and streaming,
/v1/models, /health, /metrics, and the safety checks (key, body size, token caps, fields)."""

from __future__ import annotations

import httpx
import openai
import pytest

from serve_harness import module_server

KEY = "test-key-123"


server, client = module_server("serve_api", "--slots", "2", "--queue", "2", "--max-body",
                               "16KiB", "--max-tokens", "64", "--max-prompt-tokens", "300",
                               "--ctx", "512", key=KEY)


def test_the_grammar_bomb_without_a_memory_limit(server):
    from test_serve_under_attack import bomb_is_refused_and_the_engine_serves_on

    bomb_is_refused_and_the_engine_serves_on(server, None, KEY)


def test_chat_and_completion_sync(client):
    chat = client.chat.completions.create(model="anything", max_tokens=8,
                                          messages=[{"role": "user", "content": "Hello"}])
    assert chat.choices[0].message.content is not None
    assert chat.usage.completion_tokens >= 1
    assert chat.model != "anything"  # the served model's name, not the client's label
    comp = client.completions.create(model="x", prompt="Once upon a time", max_tokens=8)
    assert comp.choices[0].text
    raw = client.chat.completions.with_raw_response.create(
        model="x", max_tokens=4, messages=[{"role": "user", "content": "Hi"}])
    assert raw.headers["x-edgepick-route"] == "edge"
    assert raw.headers["x-edgepick-route-reason"] == "default"
    assert "@" in raw.headers["x-edgepick-model-version"]


def test_streaming_chat_and_completion(client):
    stream = client.chat.completions.create(model="x", max_tokens=8, stream=True,
                                            messages=[{"role": "user", "content": "Count"}])
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert pieces
    stream = client.completions.create(model="x", prompt="One, two,", max_tokens=8, stream=True)
    assert "".join(c.choices[0].text for c in stream if c.choices)


def test_models_health_metrics(server, client):
    ids = [m.id for m in client.models.list()]
    assert len(ids) == 1
    health = httpx.get(server.url + "/health", timeout=10)  # open without a key
    assert health.status_code == 200 and health.json()["status"] == "ok"
    text = server.metrics(KEY)
    for name in ("edgepick_ttft_seconds_bucket", "edgepick_inter_token_seconds_bucket",
                 "edgepick_request_seconds_bucket", "edgepick_queue_wait_seconds_bucket",
                 "edgepick_requests_total", "edgepick_tokens_total", "edgepick_queue_depth",
                 "edgepick_busy_slots", "edgepick_engine_memory_bytes", "edgepick_active_model",
                 "edgepick_routes_total"):
        assert name in text, name
    assert server.metric("edgepick_tokens_total", KEY, kind="completion") > 0
    assert server.metric("edgepick_engine_memory_bytes", KEY) > 0


def test_api_key_required(server):
    anon = server.openai("wrong", timeout=30)
    with pytest.raises(openai.AuthenticationError):
        anon.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}])
    assert httpx.get(server.url + "/metrics", timeout=10).status_code == 401
    assert httpx.get(server.v1 + "/models", timeout=10).status_code == 401


def test_body_limit(server):
    big = {"model": "x", "messages": [{"role": "user", "content": "a " * 20000}]}
    r = httpx.post(server.v1 + "/chat/completions", json=big, timeout=30,
                   headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 413
    assert "--max-body" in r.json()["error"]["message"]


def test_token_caps(client):
    with pytest.raises(openai.BadRequestError, match="limit of 64 tokens"):
        client.chat.completions.create(model="x", max_tokens=65,
                                       messages=[{"role": "user", "content": "hi"}])
    long_prompt = "the quick brown fox jumps over the lazy dog " * 60  # ~600 tokens, < 16 KiB
    with pytest.raises(openai.BadRequestError, match="limit of 300 prompt tokens"):
        client.completions.create(model="x", prompt=long_prompt, max_tokens=4)


def test_no_field_names_a_slot_or_file(client):
    with pytest.raises(openai.BadRequestError, match="id_slot"):
        client.chat.completions.create(model="x", max_tokens=4, extra_body={"id_slot": 0},
                                       messages=[{"role": "user", "content": "hi"}])
    # the model field is a label: a path there loads nothing, the served model answers
    out = client.chat.completions.create(model="/etc/passwd.gguf", max_tokens=4,
                                         messages=[{"role": "user", "content": "hi"}])
    assert out.model != "/etc/passwd.gguf"


def test_lm_eval_shaped_requests(server):
    """The bodies lm-eval's local-completions (text and tokenized prompts, batched) and
    local-chat-completions models send for generate_until."""
    h = {"Authorization": f"Bearer {KEY}"}
    comp = {"model": "m", "prompt": ["Question: 2+2?\nAnswer:", "The sky is"], "max_tokens": 16,
            "temperature": 0, "stop": ["\n\n", "Question:"], "seed": 1234}
    r = httpx.post(server.v1 + "/completions", json=comp, headers=h, timeout=60)
    assert r.status_code == 200, r.text
    assert len(r.json()["choices"]) == 2
    tokenized = dict(comp, prompt=[[1, 504, 3156, 314], [1, 504, 8346]])
    r = httpx.post(server.v1 + "/completions", json=tokenized, headers=h, timeout=60)
    assert r.status_code == 200, r.text
    chat = {"model": "m", "messages": [{"role": "user", "content": "Say hi."}],
            "max_tokens": 16, "temperature": 0, "stop": ["<|im_end|>"], "seed": 1234}
    r = httpx.post(server.v1 + "/chat/completions", json=chat, headers=h, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["role"] == "assistant"
