"""`echo` scoring in process, without an engine child: the prompt's log-probabilities in the
legacy completions shape lm-eval reads, equal to the backend's own, cached, and refused in one
line for what it cannot answer."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from edgepick.records.candidate import RuntimeSettings
from edgepick.serve.edge import EdgePool
from edgepick.serve.engine import EngineSpec
from edgepick.serve.router_api import BadRequest, Overloaded
from edgepick.serve.scoring import score_request


@pytest.fixture(scope="module")
def pool(tiny_model):
    spec = EngineSpec(path=tiny_model, name="tiny", slots=1,
                      runtime=RuntimeSettings(n_ctx=256, n_batch=256, n_ubatch=256))
    loop = asyncio.new_event_loop()
    p = loop.run_until_complete(_make(spec))
    yield p, loop
    loop.run_until_complete(p.scorer.aclose())
    loop.close()


async def _make(spec):
    return EdgePool(spec, queue=1)


def _score(pool, body):
    p, loop = pool
    resp = loop.run_until_complete(score_request(p, body, False, time.monotonic() + 120))
    return resp.body


def test_echo_gives_each_prompt_token_its_logprob(pool, tiny_model):
    from edgepick.backends import LoadOptions, get_backend
    from edgepick.backends.base import token_logprob
    from edgepick.records.candidate import Candidate

    tokens = [1, 504, 3821, 314, 260, 1345]
    body = _score(pool, {"prompt": [tokens], "echo": True, "logprobs": 2, "max_tokens": 1})
    (choice,) = body["choices"]
    lp = choice["logprobs"]
    assert len(lp["token_logprobs"]) == len(tokens) + 1  # the prompt, then the next token
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    backend = get_backend("llama_cpp")
    backend.load(Candidate(model=tiny_model, settings=RuntimeSettings(n_ctx=256)),
                 LoadOptions(need_logits=True))
    try:
        logits = backend.logits(tokens)
    finally:
        backend.unload()
    own = [token_logprob(logits[i - 1], t) for i, t in enumerate(tokens) if i]
    assert lp["token_logprobs"][1:len(tokens)] == pytest.approx(own, abs=1e-4)
    # the greedy next token is the best of its row, and each top list holds k entries
    nxt = lp["token_logprobs"][-1]
    assert nxt == pytest.approx(max(lp["top_logprobs"][-1].values()))
    assert nxt == pytest.approx(float(np.max(logits[-1] - np.log(np.exp(
        logits[-1] - logits[-1].max()).sum()) - logits[-1].max())), abs=1e-4)
    assert all(len(t) <= 2 for t in lp["top_logprobs"][1:])
    assert body["usage"] == {"prompt_tokens": len(tokens), "completion_tokens": 1,
                             "total_tokens": len(tokens) + 1}


def test_max_tokens_zero_gives_the_prompt_alone_and_is_cached(pool):
    p, _ = pool
    body = _score(pool, {"prompt": "The cat sat", "echo": True, "logprobs": 1, "max_tokens": 0})
    lp = body["choices"][0]["logprobs"]
    assert body["choices"][0]["text"].endswith("The cat sat")
    assert len(lp["tokens"]) == body["usage"]["prompt_tokens"] and not body["usage"][
        "completion_tokens"]
    assert len(p.scorer._cache) >= 1
    again = _score(pool, {"prompt": "The cat sat", "echo": True, "logprobs": 1, "max_tokens": 0})
    assert again["choices"][0]["logprobs"] == lp


def test_echo_with_a_longer_continuation_is_the_greedy_generation(pool, tiny_model):
    from edgepick.backends import LoadOptions, get_backend
    from edgepick.records.candidate import Candidate

    tokens = [1, 504, 3821, 314, 260, 1345]
    body = _score(pool, {"prompt": [tokens], "echo": True, "logprobs": 1, "max_tokens": 5})
    (choice,) = body["choices"]
    gen = body["usage"]["completion_tokens"]
    assert 1 <= gen <= 5 and choice["finish_reason"] == ("length" if gen == 5 else "stop")
    assert len(choice["logprobs"]["tokens"]) == len(tokens) + gen
    backend = get_backend("llama_cpp")  # the engine's own greedy generation, independently
    backend.load(Candidate(model=tiny_model, settings=RuntimeSettings(n_ctx=256)),
                 LoadOptions(need_logits=True))
    try:
        own = backend.generate(tokens, 5)
        prompt_text = backend.detokenize(tokens)
    finally:
        backend.unload()
    assert choice["text"] == "".join(choice["logprobs"]["tokens"])
    assert choice["text"].endswith(own.text) and gen == own.generated_tokens
    assert choice["text"].startswith(prompt_text.strip()) or prompt_text in choice["text"]
    # each continuation token is its row's best: greedy
    for lp, top in zip(choice["logprobs"]["token_logprobs"][len(tokens):],
                       choice["logprobs"]["top_logprobs"][len(tokens):]):
        assert lp == pytest.approx(max(top.values()))


@pytest.mark.parametrize("body, param", [
    ({"prompt": "x", "echo": True, "max_tokens": -1}, "max_tokens"),
    ({"prompt": "x", "echo": True, "logprobs": 99}, "logprobs"),
    ({"prompt": [[10 ** 9]], "echo": True}, "prompt"),
    ({"prompt": {"a": 1}, "echo": True}, "prompt"),
    ({"prompt": ["x"] * 9, "echo": True, "max_tokens": 0}, "prompt"),  # over --echo-max-prompts
])
def test_what_echo_cannot_answer_is_a_400_naming_the_field(pool, body, param):
    with pytest.raises(BadRequest) as exc:
        _score(pool, body)
    assert exc.value.param == param


def test_echo_is_bounded_by_the_same_admission(pool):
    p, loop = pool
    # the one slot and the one queue place taken by generation: scoring gets a 429 too
    p.admission.enter(1)
    loop.run_until_complete(p.admission.acquire(time.monotonic() + 5, 1))
    p.admission.enter(1)
    try:
        with pytest.raises(Overloaded):
            _score(pool, {"prompt": "A new prompt, not cached", "echo": True, "max_tokens": 0})
    finally:
        p.admission.admitted -= 1
        p.admission.release(0.1, 1)


def test_echo_has_its_own_admission_and_an_empty_prompt_scores_to_nothing(pool):
    p, loop = pool
    body = _score(pool, {"prompt": "", "echo": True, "logprobs": 1, "max_tokens": 0})
    assert body["choices"][0]["finish_reason"] == "length"  # schema-valid, so answered
    own = p.scorer.admission  # one scoring at a time and its queue: then 429 at once
    taken = own.capacity
    for _ in range(taken):
        own.enter()
    try:
        t0 = time.monotonic()
        with pytest.raises(Overloaded):
            _score(pool, {"prompt": "Another prompt, not cached", "echo": True, "max_tokens": 0})
        assert time.monotonic() - t0 < 1
    finally:
        own.admitted -= taken


def test_echo_past_its_deadline_stops_and_every_outcome_is_retrieved(pool):
    """The work stops at its deadline; a failure it meets after its client was answered is
    read (no 'Task exception was never retrieved'), and its admission place comes back."""
    import gc

    from edgepick.serve.router_api import DeadlineExceeded

    p, loop = pool
    unretrieved: list = []
    loop.set_exception_handler(lambda _loop, ctx: unretrieved.append(ctx))
    try:
        for prompt in ([[10 ** 9]], "A prompt long enough to score " * 20):
            with pytest.raises((DeadlineExceeded, BadRequest)):
                loop.run_until_complete(score_request(
                    p, {"prompt": prompt, "echo": True, "max_tokens": 8}, False,
                    time.monotonic() + 0.001))
        loop.run_until_complete(asyncio.sleep(1.0))  # the work ends at its next step
        gc.collect()
        assert unretrieved == [] and p.scorer.admission.admitted == 0
    finally:
        loop.set_exception_handler(None)
