"""Prompt log-probabilities for `/v1/completions` with `echo: true` (lm-eval's multiple-choice
and perplexity tasks): llama-server ignores `echo`, so the served model file is scored in
process by an engine that declares full logits (the Backend contract's LOGITS: llama.cpp through
llama-cpp-python), one request at a time in a worker thread.

A scoring request is bounded by the same admission as generation: it takes a queue place and one
slot while it runs (429 beyond slots + queue, 504 past its deadline). Answers are cached by
token ids, so lm-eval's repeated contexts cost one evaluation. `max_tokens` 0 gives the prompt
alone; more adds a greedy continuation of up to that many tokens with its log-probabilities
(lm-eval asks for 1, then drops it; an OpenAI client that sends none gets OpenAI's 16).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from typing import Any, AsyncContextManager, Protocol

import numpy as np

from edgepick.serve.router_api import BadRequest, ServedResponse

log = logging.getLogger("edgepick.serve")
MAX_TOP = 20  # top_logprobs per position, as OpenAI's legacy completions allowed at most 5


class ScoringPool(Protocol):
    """What scoring needs of the engine pool (serve/edge.py's EdgePool): the served spec, a
    place for the scorer, and admission for work the pool runs itself."""

    spec: Any
    scorer: "PromptScorer | None"

    def admitted(self, deadline: float, n: int = 1) -> AsyncContextManager[Any]: ...


class PromptScorer:
    """The served file loaded once with full logits; `score(tokens, k)` → per-position figures."""

    def __init__(self, path: str, n_ctx: int, threads: int, cache_items: int = 512) -> None:
        self.path = path
        self.n_ctx = n_ctx
        self.threads = threads
        self._backend = None
        self.n_vocab: int | None = None
        self._lock = asyncio.Lock()
        self._cache: OrderedDict[tuple, dict] = OrderedDict()
        self._cache_items = cache_items

    def _load(self):
        from edgepick.backends import LoadOptions, get_backend
        from edgepick.backends.base import LOGITS, VOCABULARY
        from edgepick.records.candidate import Candidate, RuntimeSettings
        from edgepick.records.model_ref import ModelRef

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


def _continuation(backend, tokens: list[int], max_tokens: int) -> tuple[list[int], str]:
    """The greedy continuation's token ids and finish reason ("stop" at an end-of-generation
    token): the engine's own greedy generation, its text tokenized back when that gives as
    many tokens, else (a text that tokenizes otherwise) re-derived one arg-max at a time."""
    gen = backend.generate(list(tokens), max_tokens)
    ids = backend.tokenize(gen.text, add_bos=False, parse_special=False) if gen.text else []
    if len(ids) != gen.generated_tokens:
        ids = []
        for _ in range(gen.generated_tokens):
            ids.append(int(backend.logits(tokens + ids)[-1].argmax()))
    return ids, gen.finish_reason


def _score(backend, tokens: list[int], k: int, gen: int) -> dict:
    """Log-probability of each token given the ones before it (None for the first), the top
    `k` alternatives at each position, and the greedy continuation of up to `gen` tokens."""
    ids, finish = _continuation(backend, tokens, gen) if gen else ([], "length")
    logits = backend.logits(tokens + ids).astype(np.float64)
    m = logits.max(axis=1, keepdims=True)
    lp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    pieces = [backend.detokenize([t]) for t in tokens]
    token_lps: list[float | None] = [None]
    tops: list[dict | None] = [None]
    for i in range(1, len(tokens)):
        row = lp[i - 1]
        token_lps.append(float(row[tokens[i]]))
        tops.append(_top(backend, row, k) if k else None)
    nexts = []
    for j, nxt in enumerate(ids):
        row = lp[len(tokens) - 1 + j]
        nexts.append({"token": nxt, "piece": backend.detokenize([nxt]),
                      "logprob": float(row[nxt]), "top": _top(backend, row, k) if k else None})
    return {"tokens": tokens, "pieces": pieces, "token_logprobs": token_lps, "top": tops,
            "next": nexts, "finish": finish}


def _top(backend, row: np.ndarray, k: int) -> dict[str, float]:
    idx = np.argpartition(-row, k - 1)[:k]
    idx = idx[np.argsort(-row[idx])]
    top: dict[str, float] = {}
    for t in idx:
        top.setdefault(backend.detokenize([int(t)]), float(row[t]))
    return top


def _tokens_of(backend, prompt: str | list[int]) -> list[int]:
    if isinstance(prompt, str):
        return backend.tokenize(prompt, add_bos=True, parse_special=True)
    return list(prompt)


def _prompts(body: dict) -> list[str | list[int]]:
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list) and prompt:
        if all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
            return [prompt]
        if all(isinstance(p, str) for p in prompt):
            return list(prompt)
        if all(isinstance(p, list) and p and all(isinstance(t, int) and not isinstance(t, bool)
                                                 for t in p) for p in prompt):
            return list(prompt)
    raise BadRequest("'prompt' must be a string, a list of strings, token ids or lists of "
                     "token ids", param="prompt")


def _options(body: dict) -> tuple[int, int]:
    k = body.get("logprobs")
    if k is None or k is False:
        k = 0
    if k is True:
        k = 1
    if not isinstance(k, int) or not 0 <= k <= MAX_TOP:
        raise BadRequest(f"'logprobs' must be an integer from 0 to {MAX_TOP}", param="logprobs")
    max_tokens = body.get("max_tokens", 0)
    if max_tokens is None:
        max_tokens = 0
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 0:
        raise BadRequest("with 'echo', 'max_tokens' must be 0 (the prompt's log-probabilities) "
                         "or more (plus a greedy continuation)", param="max_tokens")
    return k, max_tokens


def _choice(index: int, scored: dict, k: int, asked: bool) -> dict:
    pieces = list(scored["pieces"])
    lps = list(scored["token_logprobs"])
    tops = [t if k else None for t in scored["top"]]
    for nxt in scored["next"]:
        pieces.append(nxt["piece"])
        lps.append(nxt["logprob"])
        tops.append(nxt["top"])
    offsets, at = [], 0
    for p in pieces:
        offsets.append(at)
        at += len(p)
    choice = {"index": index, "text": "".join(pieces), "finish_reason": scored["finish"],
              "logprobs": None}
    if asked:
        choice["logprobs"] = {"tokens": pieces, "token_logprobs": lps, "top_logprobs": tops,
                              "text_offset": offsets}
    return choice


async def score_request(pool: ScoringPool, body: dict, stream: bool,
                        deadline: float) -> ServedResponse:
    """The `echo: true` completion: prompt log-probabilities from the served file."""
    if stream:
        raise BadRequest("'echo' is answered without streaming; send 'stream': false",
                         param="stream")
    k, max_tokens = _options(body)
    n = body.get("n", 1) or 1
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise BadRequest("'n' must be a positive integer", param="n")
    prompts = _prompts(body)
    spec = pool.spec
    scorer = pool.scorer
    if scorer is None or scorer.path != spec.path:
        if scorer is not None:
            await scorer.aclose()
        scorer = pool.scorer = PromptScorer(spec.path, spec.runtime.n_ctx, spec.runtime.threads)
    results: list[dict] = []
    wait_s = 0.0
    for prompt in prompts:
        key = (tuple(prompt) if isinstance(prompt, list) else prompt, k, max_tokens)
        hit = scorer.cached(key)
        if hit is None:
            async with pool.admitted(deadline) as held:
                wait_s += held.wait_s
                hit = await _bounded(scorer, prompt, k, max_tokens, deadline)
            scorer.remember(key, hit)
        results.append(hit)
    asked = body.get("logprobs") not in (None, False)
    choices = [_choice(i * n + j, r, k, asked) for i, r in enumerate(results)
               for j in range(n)]
    n_prompt = sum(len(r["tokens"]) for r in results)
    n_gen = sum(len(r["next"]) for r in results) * n
    out = {"id": f"cmpl-{uuid.uuid4().hex[:24]}", "object": "text_completion",
           "created": int(time.time()), "model": spec.name, "choices": choices,
           "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_gen,
                     "total_tokens": n_prompt + n_gen}}
    headers = {"x-edgepick-model-version": f"{spec.name}@{spec.version}"}
    return ServedResponse(body=out, headers=headers, queue_wait_s=wait_s)


async def _bounded(scorer: PromptScorer, prompt, k: int, gen: int, deadline: float) -> dict:
    from edgepick.serve.router_api import DeadlineExceeded

    def work(backend) -> dict:
        tokens = _tokens_of(backend, prompt)
        if not tokens:
            raise BadRequest("the prompt is empty", param="prompt")
        vocab = scorer.n_vocab
        if vocab is not None and any(not 0 <= t < vocab for t in tokens):
            raise BadRequest(f"token ids must be from 0 to {vocab - 1}", param="prompt")
        if len(tokens) > scorer.n_ctx:
            raise BadRequest(f"prompt of {len(tokens)} tokens is over the context of "
                             f"{scorer.n_ctx} tokens", param="prompt", code="context_length_exceeded")
        return _score(backend, tokens, k, gen)

    try:
        # the work itself cannot be interrupted; the client is answered at its deadline
        return await asyncio.wait_for(asyncio.shield(scorer.run(work)),
                                      max(deadline - time.monotonic(), 0.001))
    except asyncio.TimeoutError:
        raise DeadlineExceeded("deadline passed while scoring the prompt") from None
