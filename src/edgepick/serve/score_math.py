"""The arithmetic of echo scoring (serve/scoring.py): the prompt's log-probabilities, its top
alternatives and a greedy continuation, from a backend with full logits, stoppable between
steps."""

from __future__ import annotations

from typing import Callable

import numpy as np


class Stopped(Exception):
    """The scoring work passed its deadline, or its client left: it stops between steps."""


def _continuation(backend, tokens: list[int], max_tokens: int,
                  check: Callable[[], None]) -> tuple[list[int], str]:
    """The greedy continuation's token ids and finish reason ("stop" at an end-of-generation
    token): the engine's own greedy generation, its text tokenized back when that gives as
    many tokens, else (a text that tokenizes otherwise) re-derived one arg-max at a time."""
    gen = backend.generate(list(tokens), max_tokens)
    ids = backend.tokenize(gen.text, add_bos=False, parse_special=False) if gen.text else []
    if len(ids) != gen.generated_tokens:
        ids = []
        for _ in range(gen.generated_tokens):
            check()
            ids.append(int(backend.logits(tokens + ids)[-1].argmax()))
    return ids, gen.finish_reason


def score(backend, tokens: list[int], k: int, gen: int, check: Callable[[], None]) -> dict:
    """Log-probability of each token given the ones before it (None for the first), the top
    `k` alternatives at each position, and the greedy continuation of up to `gen` tokens.
    `check()` raises Stopped between steps once the work must end. An empty prompt (a model
    without a BOS token) scores to nothing: there is no position to condition on."""
    if not tokens:
        return {"tokens": [], "pieces": [], "token_logprobs": [], "top": [], "next": [],
                "finish": "length"}
    ids, finish = _continuation(backend, tokens, gen, check) if gen else ([], "length")
    check()
    logits = backend.logits(tokens + ids)  # float32; each row normalised on its own
    m = logits.max(axis=1)
    lse = m + np.log(np.exp(logits - m[:, None]).sum(axis=1, dtype=np.float64))

    def lp(i: int) -> np.ndarray:
        return logits[i].astype(np.float64) - lse[i]

    pieces = [backend.detokenize([t]) for t in tokens]
    token_lps: list[float | None] = [None]
    tops: list[dict | None] = [None]
    for i in range(1, len(tokens)):
        if i % 64 == 0:
            check()
        row = lp(i - 1)
        token_lps.append(float(row[tokens[i]]))
        tops.append(_top(backend, row, k) if k else None)
    nexts = []
    for j, nxt in enumerate(ids):
        row = lp(len(tokens) - 1 + j)
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


def tokens_of(backend, prompt: str | list[int]) -> list[int]:
    if isinstance(prompt, str):
        return backend.tokenize(prompt, add_bos=True, parse_special=True)
    return list(prompt)
