"""`echo` scoring in process, without an engine child: the prompt's log-probabilities in the
legacy completions shape lm-eval reads, equal to the backend's own, cached, and refused in one
line for what it cannot answer."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from edgepick.records.candidate import RuntimeSettings
from edgepick.serve.pool.edge import EdgePool
from edgepick.serve.engine.llama_server import EngineSpec
from edgepick.serve.router_api import BadRequest, Overloaded
from edgepick.serve.pool.scoring import score_request


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


class _MergingBackend:
    """A stand-in engine that counts its evaluations, whose greedy continuation's text
    tokenizes back to other ids than the ones it chose (three pieces that merge into one)."""

    def __init__(self, report_ids: bool = True) -> None:
        self.report_ids = report_ids
        self.calls = {"generate": 0, "logits": 0}

    def generate(self, tokens, max_tokens):
        from edgepick.backends.base import Generation

        self.calls["generate"] += 1
        ids = [5, 6, 7][:max_tokens]
        return Generation(text=self.detokenize(ids), prompt_tokens=len(tokens),
                          generated_tokens=len(ids), token_ids=ids if self.report_ids else None)

    def tokenize(self, text, add_bos=True, parse_special=True):
        return [9]  # the continuation's text is one token of its own

    def detokenize(self, ids):
        return "".join(chr(ord("a") + t) for t in ids)

    def logits(self, tokens):
        self.calls["logits"] += 1
        rows = np.zeros((len(tokens), 10), dtype=np.float32)
        for i, nxt in enumerate(tokens[1:]):
            rows[i, nxt] = 3.0  # each token is its row's best: a greedy sequence
        return rows


def test_a_continuation_that_tokenizes_otherwise_is_scored_in_two_evaluations():
    """The continuation's ids are the engine's own, not its text tokenized back (which gives
    one id here, not three), and deriving them costs no evaluation per token: two in all,
    whatever the length."""
    from edgepick.serve.pool.score_math import score

    backend = _MergingBackend()
    out = score(backend, [1, 2, 3], 2, 16, lambda: None)
    assert [n["token"] for n in out["next"]] == [5, 6, 7]
    assert backend.calls == {"generate": 1, "logits": 1}
    assert all(n["logprob"] == pytest.approx(max(n["top"].values())) for n in out["next"])
    # an engine that does not report its ids: its text's tokens, still two evaluations
    backend = _MergingBackend(report_ids=False)
    out = score(backend, [1, 2, 3], 0, 16, lambda: None)
    assert [n["token"] for n in out["next"]] == [9]
    assert backend.calls == {"generate": 1, "logits": 1}


@pytest.mark.parametrize("taken", ["scorer", "generation"])
def test_an_echo_that_cannot_get_a_place_in_time_is_a_429_not_a_504(pool, taken):
    """Waiting for the scorer, or for a generation slot, ends with a 429 as soon as the work's
    expected time no longer fits before the deadline: never a 504 from a queue."""
    p, loop = pool
    _score(pool, {"prompt": "", "echo": True, "max_tokens": 0})  # the scorer exists
    scorer = p.scorer
    admission = scorer.admission if taken == "scorer" else p.admission
    admission.enter()
    loop.run_until_complete(admission.acquire(time.monotonic() + 5))
    before, scorer.prompt_s = scorer.prompt_s, 100.0  # the work will not fit in 30 s
    try:
        t0 = time.monotonic()
        with pytest.raises(Overloaded) as exc:
            loop.run_until_complete(score_request(
                p, {"prompt": "Not cached, to wait", "echo": True, "max_tokens": 0}, False,
                time.monotonic() + 30))
        assert time.monotonic() - t0 < 1 and exc.value.retry_after
        assert scorer.admission.admitted == (1 if taken == "scorer" else 0)
        assert p.admission.admitted == (1 if taken == "generation" else 0)
    finally:
        scorer.prompt_s = before
        admission.release(0.1)
