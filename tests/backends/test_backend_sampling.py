"""Generation under the deployment's sampling (issue 26 item 3): a declared capability; the same
seed draws the same text, another seed (usually) another; no sampling or temperature 0 is the
greedy path, unchanged. In process with llama.cpp's own sampler chain, and over HTTP."""

from __future__ import annotations

import json

import pytest

from edgepick.backends import base, get_backend
from edgepick.errors import EdgepickError
from edgepick.records import Candidate, RuntimeSettings

SAMPLING = {"temperature": 0.9, "top_p": 0.95, "top_k": 40, "repeat_penalty": 1.1}
PROMPT = "Edge devices run small models because"


def draws(b, seeds, n=16):
    return [b.generate(PROMPT, n, ignore_eos=True, sampling=dict(SAMPLING, seed=s)).text
            for s in seeds]


@pytest.fixture(scope="module")
def local(tiny_model):
    b = get_backend("llama_cpp")
    b.load(Candidate(model=tiny_model, settings=RuntimeSettings(n_ctx=256)))
    yield b
    b.unload()


def test_sampling_is_a_declared_capability():
    from edgepick.backends.registry import supports

    assert supports("llama_cpp", base.SAMPLING) and supports("openai_http", base.SAMPLING)


def test_llama_cpp_same_seed_same_text_other_seeds_differ_from_greedy(local):
    greedy = local.generate(PROMPT, 16, ignore_eos=True)
    a, again, *others = draws(local, [1, 1, 2, 3, 4])
    assert a == again
    assert len({a, *others}) > 1  # five seeds drawing one text from a 49k vocabulary: a bug
    assert any(t != greedy.text for t in [a, *others])
    # greedy is unchanged by having sampled, and temperature 0 is greedy
    assert local.generate(PROMPT, 16, ignore_eos=True).text == greedy.text
    zero = local.generate(PROMPT, 16, ignore_eos=True, sampling={"temperature": 0, "seed": 5})
    assert zero.text == greedy.text


def test_llama_cpp_sampled_generation_keeps_times_logprobs_and_stops(local):
    g = local.generate(PROMPT, 12, ignore_eos=True, logprobs=True,
                       sampling=dict(SAMPLING, seed=7))
    assert g.generated_tokens == 12 == len(g.token_times) == len(g.token_logprobs)
    assert all(lp <= 0 for lp in g.token_logprobs)


def test_an_unknown_sampling_field_is_one_line(local):
    with pytest.raises(EdgepickError, match="unknown sampling field.*min_q"):
        local.generate(PROMPT, 4, sampling={"temperature": 0.7, "min_q": 0.1})


def test_openai_http_sends_the_fields_in_the_request_body(monkeypatch):
    import httpx

    sent: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "m"}]})
        sent.append(json.loads(request.content))
        chunk = {"choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]}
        return httpx.Response(200, text=f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n")

    real = httpx.Client
    monkeypatch.setattr(httpx, "Client",
                        lambda **kw: real(transport=httpx.MockTransport(handler)))
    b = get_backend("openai_http")
    b.load(Candidate(model="http://127.0.0.1:9/v1#m", backend="openai_http"))
    try:
        b.generate("hi", 4, chat=True)
        b.generate("hi", 4, chat=True, sampling=dict(SAMPLING, seed=9, top_k=None))
    finally:
        b.unload()
    assert sent[0]["temperature"] == 0.0 and sent[0]["seed"] == 42 and "top_p" not in sent[0]
    assert {k: sent[1].get(k) for k in ("temperature", "top_p", "repeat_penalty", "seed")} == \
        {"temperature": 0.9, "top_p": 0.95, "repeat_penalty": 1.1, "seed": 9}
    assert "top_k" not in sent[1]  # unset: the server's own default


def test_llama_server_samples_by_seed(tiny_model, tmp_path):
    from llama_server import llama_server

    with llama_server(tiny_model, "tiny", tmp_path) as url:
        b = get_backend("openai_http")
        b.load(Candidate(model=url, backend="openai_http"))
        try:
            greedy = b.generate(PROMPT, 16, ignore_eos=True)
            a, again, *others = draws(b, [1, 1, 2, 3, 4])
            assert b.generate(PROMPT, 16, ignore_eos=True).text == greedy.text
        finally:
            b.unload()
    assert a == again and len({a, *others}) > 1
    assert any(t != greedy.text for t in [a, *others])
