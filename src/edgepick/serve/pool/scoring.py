"""Prompt log-probabilities for `/v1/completions` with `echo: true` (lm-eval's multiple-choice
and perplexity tasks): llama-server ignores `echo`, so the served model file is scored in
process by an engine that declares full logits (the Backend contract's LOGITS: llama.cpp through
llama-cpp-python), one request at a time in a worker thread.

Scoring is bounded: in length (prompt tokens and continuation, EchoLimits), in
time (the work checks its deadline between steps and stops there, or when its client leaves),
and in concurrency, by its own admission (one scoring at a time, `queue` more waiting, 429
beyond, at once) before it takes a place and a slot in the generation admission too; a wait for
either that would leave too little time for the work's expected length is a 429, never a 504
at the deadline. A scoring that outlives its client keeps its place until the work has
stopped, so nothing waits unseen behind it. Every task's outcome is retrieved. Answers are
cached by token ids, so lm-eval's repeated contexts cost one evaluation. Each prompt costs two
engine evaluations at most (serve/pool/score_math.py). `max_tokens` 0 gives the prompt alone; more
adds a greedy continuation of up to that many tokens with its log-probabilities (lm-eval asks
for 1, then drops it; an OpenAI client that sends none gets OpenAI's 16).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, AsyncContextManager, Protocol

from edgepick.backends import LoadOptions, get_backend
from edgepick.backends.base import LOGITS, VOCABULARY
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.model_ref import ModelRef
from edgepick.serve.pool.admission import Admission
from edgepick.serve.pool.collect import replayed
from edgepick.serve.pool.score_math import Stopped, choice, score, tokens_of
from edgepick.serve.request_models import CompletionRequest
from edgepick.serve.router_api import BadRequest, DeadlineExceeded, Overloaded, ServedResponse
from edgepick.serve.validation import as_request

log = logging.getLogger("edgepick.serve")


@dataclass(frozen=True)
class EchoLimits:
    """How much one echo request may ask (serve's --echo-* settings)."""

    max_prompt_tokens: int = 1024  # tokens of one prompt scored
    max_tokens: int = 16  # tokens of its greedy continuation (OpenAI's default max_tokens)
    queue: int = 4  # scorings that may wait for the one running; beyond: 429
    max_prompts: int = 8  # prompts one echo request may list (each takes its turn)


class ScoringPool(Protocol):
    """What scoring needs of the engine pool (serve/pool/edge.py's EdgePool): the served spec, a
    place for the scorer, its admission and places in it for work the pool runs itself."""

    spec: Any
    scorer: "PromptScorer | None"
    echo_limits: EchoLimits
    admission: Admission

    def admitted(self, deadline: float, n: int = 1) -> AsyncContextManager[Any]: ...


class PromptScorer:
    """The served file loaded once with full logits; `score(tokens, k)` → per-position figures."""

    def __init__(self, path: str, n_ctx: int, threads: int, cache_items: int = 512,
                 limits: EchoLimits | None = None) -> None:
        self.path = path
        self.limits = limits or EchoLimits()
        self.admission = Admission(1, self.limits.queue)  # its own: one at a time
        self.n_ctx = n_ctx
        self.threads = threads
        self._backend = None
        self.n_vocab: int | None = None
        self._lock = asyncio.Lock()
        self._cache: OrderedDict[tuple, dict] = OrderedDict()
        self._cache_items = cache_items
        self.prompt_s = 1.0  # moving average of one prompt's scoring time (its load included)

    def expected_s(self, prompts: int) -> float:
        """How long scoring `prompts` more prompts is expected to take."""
        return prompts * self.prompt_s

    def took(self, seconds: float) -> None:
        """One prompt's scoring time (at least: a scoring stopped at its deadline took more)."""
        self.prompt_s = 0.5 * self.prompt_s + 0.5 * seconds

    def _load(self):
        ref = ModelRef.of(self.path)
        backend = get_backend(ref.backend)
        backend.require(LOGITS, "echo with logprobs scores the prompt in process")
        settings = RuntimeSettings(threads=self.threads, n_ctx=self.n_ctx,
                                   n_batch=min(self.n_ctx, 512), n_ubatch=min(self.n_ctx, 512))
        t0 = time.monotonic()
        backend.load(Candidate(ref=ref, settings=settings), LoadOptions(need_logits=True))
        log.info("prompt scorer loaded %s in %.1f s", self.path, time.monotonic() - t0)
        if backend.supports(VOCABULARY):
            self.n_vocab = backend.vocabulary().n_vocab
        return backend

    async def run(self, fn, *args):
        """`fn(backend, *args)` in the worker thread, one at a time."""
        async with self._lock:
            if self._backend is None:
                self._backend = await asyncio.to_thread(self._load)
            return await asyncio.to_thread(fn, self._backend, *args)

    def cached(self, key: tuple) -> dict | None:
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
        return hit

    def remember(self, key: tuple, value: dict) -> None:
        self._cache[key] = value
        while len(self._cache) > self._cache_items:
            self._cache.popitem(last=False)

    async def aclose(self) -> None:
        async with self._lock:
            if self._backend is not None:
                await asyncio.to_thread(self._backend.unload)
                self._backend = None


def _prompts(request: CompletionRequest) -> list[str | list[int]]:
    """Each prompt to score (a list of token ids is one prompt)."""
    prompt = request.prompt
    if isinstance(prompt, str) or isinstance(prompt[0], int):
        return [prompt]
    return list(prompt)


def _options(request: CompletionRequest, limits: EchoLimits) -> tuple[int, int]:
    """(top alternatives per position, continuation length). The continuation is capped, not
    refused (max_tokens is an upper bound): it ends with finish_reason "length" at
    --echo-max-tokens."""
    return request.logprobs or 0, min(request.max_tokens or 0, limits.max_tokens)


async def score_request(pool: ScoringPool, body: CompletionRequest | dict, stream: bool,
                        deadline: float) -> ServedResponse:
    """The `echo: true` completion: prompt log-probabilities from the served file. `body` is
    the typed request (or a router's body dict, checked into it)."""
    request = as_request("completion", body)
    limits = pool.echo_limits
    k, max_tokens = _options(request, limits)
    n = request.n or 1
    prompts = _prompts(request)
    if len(prompts) > limits.max_prompts:
        raise BadRequest(f"an echo request scores at most {limits.max_prompts} prompts "
                         f"(--echo-max-prompts); this one lists {len(prompts)}", param="prompt")
    spec = pool.spec
    scorer = pool.scorer
    if scorer is None or scorer.path != spec.path or scorer.limits != limits:
        if scorer is not None:
            await scorer.aclose()
        scorer = pool.scorer = PromptScorer(spec.path, spec.runtime.n_ctx, spec.runtime.threads,
                                            limits=limits)
    keys = [(tuple(p) if isinstance(p, list) else p, k, max_tokens) for p in prompts]
    results: list[dict | None] = [scorer.cached(key) for key in keys]
    wait_s = 0.0
    todo = sum(r is None for r in results)
    if todo:
        own = scorer.admission
        own.enter()  # 429 at once when the scorer and its queue are taken
        wait_s = await _in_time(own.acquire(deadline - scorer.expected_s(todo)), own)
        held = _Hold(own)
        try:
            for i, (prompt, key) in enumerate(zip(prompts, keys)):
                if results[i] is not None:
                    continue
                place = pool.admitted(deadline - scorer.expected_s(todo))
                wait_s += (await _in_time(place.__aenter__(), pool.admission)).wait_s
                try:
                    results[i] = await _bounded(scorer, prompt, k, max_tokens, deadline, held)
                finally:
                    await place.__aexit__(None, None, None)
                todo -= 1
                scorer.remember(key, results[i])
        finally:
            held.release()
    asked = request.logprobs is not None
    choices = [choice(i * n + j, r, k, asked) for i, r in enumerate(results)
               for j in range(n)]
    n_prompt = sum(len(r["tokens"]) for r in results)
    n_gen = sum(len(r["next"]) for r in results) * n
    out = {"id": f"cmpl-{uuid.uuid4().hex[:24]}", "object": "text_completion",
           "created": int(time.time()), "model": spec.name, "choices": choices,
           "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_gen,
                     "total_tokens": n_prompt + n_gen}}
    headers = {"x-edgepick-model-version": f"{spec.name}@{spec.version}"}
    if stream:  # scored whole, sent as one chunk per choice
        return replayed(out, "completion", headers, wait_s)
    return ServedResponse(body=out, headers=headers, queue_wait_s=wait_s)


class _Hold:
    """The scorer's admission place, given back once: when the request ends, or, when its
    work outlives it (a client that left), when that work has stopped."""

    def __init__(self, admission: Admission) -> None:
        self.admission, self.t0, self.task = admission, time.monotonic(), None
        self._done = False

    def release(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.add_done_callback(lambda _t: self._give())
        else:
            self._give()

    def _give(self) -> None:
        if not self._done:
            self._done = True
            self.admission.release(time.monotonic() - self.t0)


async def _in_time(waiting, admission: Admission):
    """A place taken by the time the scoring's expected work still fits its deadline. A wait
    that cannot end by then is a 429 at that moment, not a 504 once the work has overrun."""
    try:
        return await waiting
    except DeadlineExceeded:
        raise Overloaded("echo scoring busy: no place frees in time to score this request "
                         "before its deadline", retry_after=admission.retry_after()) from None


def _retrieved(task: asyncio.Future) -> None:
    """Read a finished task's outcome, so no exception is left 'never retrieved'."""
    if not task.cancelled():
        task.exception()


async def _bounded(scorer: PromptScorer, prompt, k: int, gen: int, deadline: float,
                   held: _Hold) -> dict:
    stop = threading.Event()  # set when the client is gone or answered at its deadline

    def check() -> None:
        if stop.is_set() or time.monotonic() > deadline:
            raise Stopped()

    def work(backend) -> dict:
        tokens = tokens_of(backend, prompt)
        vocab = scorer.n_vocab
        if vocab is not None and any(not 0 <= t < vocab for t in tokens):
            raise BadRequest(f"token ids must be from 0 to {vocab - 1}", param="prompt")
        cap = min(scorer.n_ctx, scorer.limits.max_prompt_tokens)
        if len(tokens) + gen > cap:
            raise BadRequest(f"prompt of {len(tokens)} tokens plus {gen} more is over the "
                             f"{cap} tokens echo scores (--echo-max-prompt-tokens, the "
                             "context)", param="prompt", code="context_length_exceeded")
        return score(backend, tokens, k, gen, check)

    task = held.task = asyncio.ensure_future(scorer.run(work))
    task.add_done_callback(_retrieved)
    t0 = time.monotonic()
    try:
        out = await asyncio.wait_for(asyncio.shield(task), max(deadline - t0, 0.001))
        scorer.took(time.monotonic() - t0)
        return out
    except (asyncio.TimeoutError, Stopped):
        stop.set()
        scorer.took(time.monotonic() - t0)
        raise DeadlineExceeded("deadline passed while scoring the prompt") from None
    except BaseException:
        stop.set()  # the client left: the work stops at its next step
        raise
