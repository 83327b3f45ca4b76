"""The official `ollama` Python client and langchain-ollama's ChatOllama, unchanged, against
`edgepick serve` on the bundled SmolLM2 (with an embedding engine): chat whole and streamed,
generate, embed, list, ps, show, a JSON-schema `format` and a tool call; each greedy answer
equal to the OpenAI route's for the same request; refusals as Ollama shapes them."""

from __future__ import annotations

import json

import httpx
import pytest
from parts import need_module

from serve_harness import chat_and_embedding_deploy, serve

KEY = "ollama-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
GREEDY = {"temperature": 0, "seed": 1, "num_predict": 24}
ASK = [{"role": "user", "content": "Name three colours."}]
SCHEMA = {"type": "object", "properties": {"colour": {"type": "string", "maxLength": 12}},
          "required": ["colour"], "additionalProperties": False}
TOOL = {"type": "function", "function": {
    "name": "add", "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"},
                                                    "b": {"type": "integer"}},
                   "required": ["a", "b"]}}}


@pytest.fixture(scope="module")
def server(smollm2_q4_1, tiny_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve_ollama")
    path = chat_and_embedding_deploy(tmp, "smollm2", smollm2_q4_1, tiny_model, n_ctx=1024)
    with serve([str(path), "--slots", "2", "--api-key", KEY, "--threads", "1",
                "--max-tokens", "64"], tmp) as s:
        yield s


@pytest.fixture(scope="module")
def ollama(server):
    mod = need_module("ollama")  # pinned in the `test` extra
    return mod.Client(host=server.url, headers=AUTH, timeout=120)


def _openai_chat(server, messages: list[dict], **extra) -> dict:
    body = {"model": "smollm2", "messages": messages, "max_tokens": GREEDY["num_predict"],
            "temperature": 0, "seed": 1, **extra}
    r = httpx.post(server.v1 + "/chat/completions", json=body, headers=AUTH, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]


def test_chat_whole_and_streamed_equal_the_openai_route(server, ollama):
    want = _openai_chat(server, ASK)["message"]["content"]
    whole = ollama.chat(model="smollm2", messages=ASK, options=GREEDY, stream=False)
    assert whole.message.content == want and whole.done and whole.done_reason in ("stop",
                                                                                   "length")
    assert whole.eval_count > 0 and whole.prompt_eval_count > 0
    assert whole.total_duration > whole.eval_duration > 0  # nanoseconds
    parts = list(ollama.chat(model="smollm2", messages=ASK, options=GREEDY, stream=True))
    assert "".join(p.message.content or "" for p in parts) == want
    assert parts[-1].done and not any(p.done for p in parts[:-1])
    assert parts[-1].eval_count == whole.eval_count


def test_generate_equals_a_chat_turn_on_the_openai_route(server, ollama):
    want = _openai_chat(server, [{"role": "user", "content": "Why is the sky blue?"}])
    out = ollama.generate(model="smollm2", prompt="Why is the sky blue?", options=GREEDY)
    assert out.response == want["message"]["content"]
    streamed = "".join(p.response for p in ollama.generate(
        model="smollm2", prompt="Why is the sky blue?", options=GREEDY, stream=True))
    assert streamed == out.response
    short = ollama.generate(model="smollm2", prompt="Count: one, two,",
                            options=dict(GREEDY, num_predict=2))
    assert short.eval_count == 2 and short.done_reason == "length"


def test_format_schema_is_the_same_constraint_as_response_format(server, ollama):
    fmt = {"type": "json_schema", "json_schema": {"name": "format", "schema": SCHEMA}}
    want = _openai_chat(server, ASK, response_format=fmt, max_tokens=48)["message"]["content"]
    out = ollama.chat(model="smollm2", messages=ASK, format=SCHEMA,
                      options=dict(GREEDY, num_predict=48))
    assert out.message.content == want
    assert set(json.loads(out.message.content)) == {"colour"}
    loose = ollama.chat(model="smollm2", messages=ASK, format="json",
                        options=dict(GREEDY, num_predict=48))
    assert isinstance(json.loads(loose.message.content), dict)


def test_a_tool_call_in_ollama_shape(server):
    """SmolLM2's template writes no tool calls: Ollama has no tool_choice, so the client asks
    for one with serve's header, set once on the official client."""
    mod = need_module("ollama")
    forced = mod.Client(host=server.url, timeout=120,
                        headers=dict(AUTH, **{"x-edgepick-tool-choice": "required"}))
    msgs = [{"role": "user", "content": "What is 2 + 3?"}]
    want = _openai_chat(server, msgs, tools=[TOOL], tool_choice="required", max_tokens=64)
    assert want["finish_reason"] == "tool_calls", want
    (openai_call,) = want["message"]["tool_calls"]
    out = forced.chat(model="smollm2", messages=msgs, tools=[TOOL],
                      options=dict(GREEDY, num_predict=64))
    (call,) = out.message.tool_calls
    assert call.function.name == "add" == openai_call["function"]["name"]
    assert dict(call.function.arguments) == json.loads(openai_call["function"]["arguments"])
    parts = list(forced.chat(model="smollm2", messages=msgs, tools=[TOOL], stream=True,
                             options=dict(GREEDY, num_predict=64)))
    streamed = [c for p in parts for c in (p.message.tool_calls or [])]
    assert [(c.function.name, dict(c.function.arguments)) for c in streamed] == [
        (call.function.name, dict(call.function.arguments))]
    # the result goes back as Ollama sends it: a tool message naming the tool
    again = forced.chat(model="smollm2", options=GREEDY, messages=msgs + [
        {"role": "assistant", "content": "", "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_name": "add", "content": "5"}])
    assert again.done and again.message.content


def test_embed_list_ps_show_and_version(server, ollama):
    names = {m.model for m in ollama.list().models}
    assert "smollm2" in names and len(names) == 2
    (embedder,) = names - {"smollm2"}
    out = ollama.embed(model=embedder, input=["The cat sat.", "Small models."])
    assert len(out.embeddings) == 2 and len(out.embeddings[0]) > 8
    assert out.prompt_eval_count > 0
    legacy = ollama.embeddings(model=embedder, prompt="The cat sat.")  # Ollama's older call
    assert legacy.embedding == pytest.approx(out.embeddings[0], abs=1e-6)
    ps = {m.model: m for m in ollama.ps().models}
    assert ps["smollm2"].size > 100 << 20 and ps["smollm2"].size_vram == 0
    assert ps["smollm2"].context_length == 1024 and ps["smollm2"].expires_at is not None
    show = ollama.show("smollm2")
    assert show.details.family == "llama" and show.details.quantization_level == "Q4_1"
    assert "completion" in show.capabilities and show.modelinfo["llama.context_length"] > 0
    assert "im_start" in show.template
    assert httpx.get(server.url + "/api/version", headers=AUTH, timeout=10).json()["version"]


def test_refusals_reach_the_client_as_ollama_errors(server, ollama):
    mod = need_module("ollama")
    with pytest.raises(mod.ResponseError) as exc:
        ollama.chat(model="llama3:8b", messages=ASK)
    assert exc.value.status_code == 404 and "not found" in exc.value.error
    with pytest.raises(mod.ResponseError) as exc:
        ollama.chat(model="smollm2", messages=ASK, options={"num_gpu": 1})
    assert exc.value.status_code == 400 and "options.num_gpu" in exc.value.error
    r = httpx.post(server.url + "/api/chat", json={"model": "smollm2", "messages": ASK},
                   timeout=10)
    assert r.status_code == 401 and list(r.json()) == ["error"] and r.headers["x-request-id"]
    # counted under their own endpoint, beside the OpenAI routes'
    assert server.metric("edgepick_requests_total", KEY, endpoint="/api/chat",
                         status="200") >= 2
    assert server.metric("edgepick_requests_total", KEY, status="500") == 0
    assert "Traceback" not in server.log.read_text()


def test_langchain_chat_ollama(server):
    lc = need_module("langchain_ollama")  # pinned in the `test` extra
    llm = lc.ChatOllama(base_url=server.url, model="smollm2", temperature=0, seed=1,
                        num_predict=GREEDY["num_predict"], client_kwargs={"headers": AUTH})
    msg = llm.invoke(ASK[0]["content"])
    assert msg.content == _openai_chat(server, ASK)["message"]["content"]
    assert msg.usage_metadata and msg.usage_metadata["output_tokens"] > 0
    assert "".join(p.content for p in llm.stream(ASK[0]["content"])) == msg.content
