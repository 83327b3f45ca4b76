"""The arithmetic of echo scoring (serve/pool/scoring.py): the prompt's log-probabilities, its top
alternatives and a greedy continuation, from a backend with full logits, stoppable between
steps, and their legacy completions shape."""

from __future__ import annotations

from typing import Callable

import numpy as np


class Stopped(Exception):
    """The scoring work passed its deadline, or its client left: it stops between steps."""


def _continuation(backend, tokens: list[int], max_tokens: int) -> tuple[list[int], str]:
    """The greedy continuation's token ids and finish reason ("stop" at an end-of-generation
    token): the ids the engine's own greedy generation chose. One evaluation, whatever its text:
    the text may tokenize back to other ids (a merge across two pieces), which is why the ids
    are read from the generation, not from its text. An engine that does not report its ids
    gets its text's tokens."""
    gen = backend.generate(list(tokens), max_tokens)
    if gen.token_ids is not None:
        return list(gen.token_ids), gen.finish_reason
    ids = backend.tokenize(gen.text, add_bos=False, parse_special=False) if gen.text else []
    return ids, gen.finish_reason


def score(backend, tokens: list[int], k: int, gen: int, check: Callable[[], None]) -> dict:
    """Log-probability of each token given the ones before it (None for the first), the top
    `k` alternatives at each position, and the greedy continuation of up to `gen` tokens: two
    engine evaluations at most (the continuation, then every row at once).
    `check()` raises Stopped between steps once the work must end. An empty prompt (a model
    without a BOS token) scores to nothing: there is no position to condition on."""
    if not tokens:
        return {"tokens": [], "pieces": [], "token_logprobs": [], "top": [], "next": [],
                "finish": "length"}
    ids, finish = _continuation(backend, tokens, gen) if gen else ([], "length")
    check()
    # one more evaluation gives every row: the prompt's and the continuation's
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


def choice(index: int, scored: dict, k: int, asked: bool) -> dict:
    """A scored prompt as a legacy completions choice; `logprobs` only when `asked`."""
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
    out = {"index": index, "text": "".join(pieces), "finish_reason": scored["finish"],
           "logprobs": None}
    if asked:
        out["logprobs"] = {"tokens": pieces, "token_logprobs": lps, "top_logprobs": tops,
                           "text_offset": offsets}
    return out


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
