"""serve's contract fuzzed (issue 25 item 10): schemathesis reads `/openapi.json` and sends
valid and invalid requests generated from it to serve on a stand-in engine; no answer may be a
5xx or break the documented schema. Bounded in examples per operation and in time.

The inputs it found that once broke serve are kept below as plain regression tests."""

from __future__ import annotations

import os

import pytest
from parts import need_module

schemathesis = need_module("schemathesis")  # pinned in the `test` extra
from hypothesis import HealthCheck, seed, settings  # noqa: E402
from schemathesis.checks import CHECKS, load_all_checks  # noqa: E402

from fake_edge import FakePool, FakeSpec, make_app  # noqa: E402
import serve_fuzz_hooks  # noqa: E402,F401  (the prompt caps the schema declares; its docstring)

KEY = "fuzz-key"
load_all_checks()
ALL_CHECKS = list(CHECKS.get_all())  # the CLI's `--checks all`


# embeddings on: without them /v1/embeddings is a 501 by design (tested in test_serve_http.py)
APP, POOL = make_app({"api_key": KEY, "max_tokens": 64, "max_body": 64 * 1024},
                     pool=FakePool(FakeSpec(embeddings=True)))
# every documented endpoint: the OpenAI surface, /health and its probes, the tokenizer
# endpoints lm-eval reads, the engine's slot use and /v1/feedback (the stand-in answers for the
# engine; the real engine's side of these is tested in test_serve_lm_eval.py and others)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)
# A body over a size limit is refused 413 before it is parsed (/v1/feedback caps at 16 KiB):
# that refuses invalid data as surely as a 400, so the negative-data check accepts it.
schema.config.checks.negative_data_rejection.expected_statuses.append("413")


# the same examples on every run, so CI is reproducible; EDGEPICK_FUZZ_SEED=N (and
# EDGEPICK_FUZZ_EXAMPLES) explore new ones by hand
FUZZ_SEED = os.environ.get("EDGEPICK_FUZZ_SEED")


@schema.parametrize()
@settings(max_examples=int(os.environ.get("EDGEPICK_FUZZ_EXAMPLES", "40")), deadline=None,
          suppress_health_check=list(HealthCheck), derandomize=FUZZ_SEED is None)
@seed(int(FUZZ_SEED or 0))
def test_no_5xx_and_every_answer_as_documented(case):
    case.call_and_validate(headers={"Authorization": f"Bearer {KEY}"}, checks=ALL_CHECKS)


# What the fuzzer sent that once failed a check (kept as plain tests: no 5xx, and a refusal is
# one OpenAI-shaped 4xx). Add each new finding here with the status it must get.
CORPUS = [
    ("/v1/chat/completions", {"messages": [{"content": "", "role": "system"}], "max_tokens": 0,
                              "max_completion_tokens": 1, "stream": False}, 400),
    ("/v1/completions", {"prompt": "", "max_tokens": 0, "stream": True}, 400),
    ("/v1/completions", {"prompt": "", "max_tokens": 1, "stream": True}, 200),
    ("/v1/embeddings", {"input": "*", "dimensions": 30.0}, 400),
    ("/v1/embeddings", {"dimensions": None, "encoding_format": None}, 400),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "n": None,
                              "stop": None, "tools": None, "logit_bias": None}, 200),
    ("/v1/chat/completions", {"messages": [{"role": "assistant", "content": None,
                                            "tool_calls": [{"type": "function", "function": {
                                                "name": "f", "arguments": "{}"}}]},
                                           {"role": "tool", "content": "{}"}]}, 200),
    # the engine continues a final assistant message, and refuses one with tool calls or a
    # second one (schemathesis seed 1302 against the real engine): x-edgepick-last-message
    ("/v1/chat/completions", {"messages": [{"role": "assistant", "content": None,
                                            "tool_calls": [{"type": "function", "function": {
                                                "name": "f", "arguments": "{}"}}]}]}, 400),
    ("/v1/chat/completions", {"messages": [{"role": "assistant", "content": "a"},
                                           {"role": "assistant", "content": "b"}]}, 400),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"},
                                           {"role": "assistant", "content": "The"}]}, 200),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}], '
                             b'"mirostat_tau": 1e999}', 400),
    # the tokenizer endpoints and feedback, fuzzed since they are documented
    ("/tokenize", {}, 400),
    ("/tokenize", {"prompt": "a b", "add_special_tokens": "no"}, 400),
    ("/detokenize", {"tokens": [1, -2]}, 400),
    ("/detokenize", {"tokens": [True]}, 400),
    ("/v1/feedback", {"request_id": "r1", "rating": "meh"}, 400),
    ("/v1/feedback", {"request_id": "r1", "rating": "up", "extra": 1}, 400),
    ("/v1/feedback", {"request_id": "r 1", "rating": "up"}, 400),
    # issue 35's ST202 findings: what the schema allows is served, what it refuses is a 400
    ("/detokenize", {"tokens": [1.0, 2.0]}, 200),
    ("/tokenize", {"prompt": None, "content": None}, 400),
    ("/v1/completions", {"echo": True, "prompt": ""}, 200),
    ("/v1/embeddings", {"input": ""}, 400),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}], '
                             b'"\\ud800": 1}', 400),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                              "reasoning_format": "bogus"}, 400),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                              "top_logprobs": 2}, 400),  # only with logprobs: true
    # llama.cpp refuses a repeat penalty of 0 (schemathesis seed 1201 against the real engine:
    # the schema allowed it) or one a float32 cannot hold, or whose inverse it cannot
    ("/v1/completions", {"prompt": "x", "repeat_penalty": 0.0}, 400),
    ("/v1/completions", {"prompt": "x", "repeat_penalty": 1e-40}, 400),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                              "repeat_penalty": 1e39}, 400),
    ("/v1/completions", {"prompt": "x", "repeat_penalty": 1.1}, 200),
    # an empty prompt completed n > 1 times wedged the real engine (seed 1201): its child slots
    # wait for a parent that never reads the prompt; an echo is scored by serve, so it may
    ("/v1/completions", {"prompt": "", "n": 2}, 400),
    ("/v1/completions", {"prompt": ["a", ""], "n": 2, "max_tokens": 4}, 400),
    ("/v1/completions", {"prompt": ["a", ""], "max_tokens": 4}, 200),
    ("/v1/completions", {"prompt": "", "n": 2, "echo": True, "max_tokens": 0}, 200),
    # a prompt of token ids over --max-prompt-tokens (448 here: 512 - 64): its count is exact,
    # and the schema says so (maxItems); a list of id lists is counted the same way
    ("/v1/completions", {"prompt": [1] * 449}, 400),
    ("/v1/completions", {"prompt": [[1] * 400, [1] * 49]}, 400),
    # twenty prompts run in turn past the deadline under load (seed 1302): --max-prompts (8)
    ("/v1/completions", {"prompt": ["x"] * 9, "max_tokens": 1}, 400),
    ("/v1/completions", {"prompt": [[1]] * 9, "max_tokens": 1}, 400),
    # a reason far over its 2000 characters in astral-plane letters: over the 16 KiB cap
    ("/v1/feedback", {"reason": ".1f" + "\U00089958" * 5000, "request_id": None,
                      "rating": "up"}, 413),
]


@pytest.mark.parametrize("path, body, status", CORPUS)
def test_corpus_of_found_inputs(path, body, status):
    from fastapi.testclient import TestClient

    with TestClient(APP) as c:
        h = {"Authorization": f"Bearer {KEY}", "content-type": "application/json"}
        r = c.post(path, content=body, headers=h) if isinstance(body, bytes) else \
            c.post(path, json=body, headers=h)
    assert r.status_code == status, r.text
    if status >= 400:
        err = r.json()["error"]
        assert isinstance(err["code"], str) and err["message"]
        # a field is named, except where no field is at fault (unparsable JSON, a body too big)
        assert err["param"] is not None or err["code"] == "invalid_json" or status == 413


def test_the_schema_declares_the_prompt_caps():
    from fastapi.testclient import TestClient

    with TestClient(APP) as c:
        comps = c.get("/openapi.json").json()["components"]["schemas"]
    for model in ("ChatCompletionRequest", "CompletionRequest"):
        assert comps[model]["x-edgepick-max-prompt-tokens"] == 448
    ids = [b for b in comps["CompletionRequest"]["properties"]["prompt"]["anyOf"]
           if b.get("items", {}).get("type") == "integer"]
    assert ids[0]["maxItems"] == 448
    many = [b for b in comps["CompletionRequest"]["properties"]["prompt"]["anyOf"]
            if b.get("type") == "array" and b.get("items", {}).get("type") != "integer"]
    assert many and all(b["maxItems"] == 8 for b in many)  # --max-prompts


class _Case:
    """Just what the hook reads of a schemathesis case: the operation and its schema."""

    def __init__(self, schema: dict, model: str) -> None:
        ref = {"$ref": f"#/components/schemas/{model}"}
        self.operation = type("Op", (), {
            "definition": type("D", (), {"raw": {"requestBody": {"content": {
                "application/json": {"schema": ref}}}}})(),
            "schema": type("S", (), {"raw_schema": schema})()})()


@pytest.mark.parametrize("status, code, message, dropped", [
    (400, "context_length_exceeded", "prompt of 500 tokens is over this server's limit of 448 "
     "prompt tokens (--max-prompt-tokens)", True),
    # a cap other than the declared one, a count under it, another code: still a failure
    (400, "context_length_exceeded", "prompt of 300 tokens is over this server's limit of 128 "
     "prompt tokens (--max-prompt-tokens)", False),
    (400, "context_length_exceeded", "prompt of 200 tokens is over this server's limit of 448 "
     "prompt tokens (--max-prompt-tokens)", False),
    (400, "invalid_value", "prompt of 500 tokens is over this server's limit of 448 prompt "
     "tokens (--max-prompt-tokens)", False),
    (422, "context_length_exceeded", "prompt of 500 tokens is over this server's limit of 448 "
     "prompt tokens (--max-prompt-tokens)", False),
])
def test_the_fuzz_drops_only_the_documented_refusal_over_a_declared_cap(status, code, message,
                                                                        dropped):
    import json

    from fastapi.testclient import TestClient
    from schemathesis.openapi.checks import RejectedPositiveData

    with TestClient(APP) as c:
        schema = c.get("/openapi.json").json()
    failure = RejectedPositiveData(operation="POST /v1/chat/completions", message="",
                                   status_code=status, allowed_statuses=["2xx"])
    response = type("R", (), {"status_code": status, "content": json.dumps(
        {"error": {"code": code, "message": message}}).encode()})()
    case = _Case(schema, "ChatCompletionRequest")
    assert serve_fuzz_hooks.refused_over_declared_cap(failure, case, response) is dropped


@pytest.mark.parametrize("messages, param, dropped", [
    ([{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": "{}"}}]}], "messages[1]", True),
    ([{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}],
     "messages[1]", True),
    # a conversation that ends otherwise, or a 400 naming another field: still a failure
    ([{"role": "user", "content": "x"}], "messages[0]", False),
    ([{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}],
     "temperature", False),
])
def test_the_fuzz_drops_only_the_documented_refusal_of_a_conversation_end(messages, param,
                                                                          dropped):
    import json

    from fastapi.testclient import TestClient
    from schemathesis.openapi.checks import RejectedPositiveData

    with TestClient(APP) as c:
        schema = c.get("/openapi.json").json()
    assert "x-edgepick-last-message" in schema["components"]["schemas"]["ChatCompletionRequest"]
    failure = RejectedPositiveData(operation="POST /v1/chat/completions", message="",
                                   status_code=400, allowed_statuses=["2xx"])
    response = type("R", (), {"status_code": 400, "content": json.dumps(
        {"error": {"code": "invalid_value", "param": param}}).encode()})()
    case = _Case(schema, "ChatCompletionRequest")
    case.body = {"messages": messages}
    assert serve_fuzz_hooks.refused_by_declared_last_message(failure, case, response) is dropped
