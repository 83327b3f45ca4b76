"""`context_from: prompts.jsonl` (seed 000 §7.1: know the P50/P95/P99 of your context
lengths): the product's own prompts, counted with each candidate's own tokenizer through the
Backend contract, give that candidate's context percentiles, as `context_tokens` would."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from edgepick.backends.base import CHAT_TEMPLATE, TOKENIZE
from edgepick.backends.registry import get_backend
from edgepick.decide.scenarios import ContextTokens
from edgepick.errors import InputError

_EXPECTED = "expected a JSON object with 'prompt' (a string) or 'messages' (a chat list)"


def context_path(lp) -> str:
    """The prompts file, relative to the file that named it: the plan (its overrides), else
    the scenario's own file."""
    given = (lp.plan.scenario.overrides or {}).get("context_from")
    if given is not None:
        return lp.resolve(given)
    path = lp.scenario.context_from
    if os.path.isabs(path) or lp.scenario.source is None:
        return lp.resolve(path)
    return str(Path(lp.scenario.source).parent / path)


def read_prompts(path: str | Path) -> list[str | list[dict]]:
    """One prompt a line: a string, or OpenAI chat messages. A bad line stops with one line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "context_from file not found")
    prompts: list[str | list[dict]] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(path, f"broken JSON: {exc.msg} at column {exc.colno}",
                                 line=lineno) from None
            prompts.append(_prompt(raw, path, lineno))
    if not prompts:
        raise InputError(path, "no prompts: " + _EXPECTED + ", one a line")
    return prompts


def _prompt(raw, path: Path, lineno: int) -> str | list[dict]:
    if isinstance(raw, dict) and isinstance(raw.get("prompt"), str):
        return raw["prompt"]
    msgs = raw.get("messages") if isinstance(raw, dict) else None
    if isinstance(msgs, list) and msgs and all(
            isinstance(m, dict) and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str) for m in msgs):
        return msgs
    raise InputError(path, _EXPECTED, line=lineno)


def count_tokens(backend, prompts: list[str | list[dict]]) -> list[int]:
    """Each prompt's length in the loaded `backend`'s own tokens; messages are rendered with its
    chat template, as its generate(chat=True) does."""
    backend.require(TOKENIZE, "context_from counts prompts with the candidate's own tokenizer")
    if any(isinstance(p, list) for p in prompts):
        backend.require(CHAT_TEMPLATE, "context_from has chat messages")
    bos = backend.tokenize("", add_bos=True)
    out = []
    for p in prompts:
        tokens = backend.tokenize(backend.render_chat(p) if isinstance(p, list) else p)
        if isinstance(p, list) and bos and tokens[:2] == bos * 2:
            tokens = tokens[1:]  # the template wrote its own BOS; the engine adds no second
        out.append(len(tokens))
    return out


def nearest_rank(counts: list[int], pct: float) -> int:
    s = sorted(counts)
    return s[max(1, math.ceil(pct / 100 * len(s))) - 1]


def percentiles(counts: list[int]):
    return ContextTokens(p50=nearest_rank(counts, 50), p95=nearest_rank(counts, 95),
                         p99=nearest_rank(counts, 99))


def candidate_context(candidate, prompts, path: str):
    """(ContextTokens, note) for one candidate (a Candidate): loaded, counted, unloaded (the
    contract has no vocabulary-only load)."""
    backend = get_backend(candidate.backend)
    backend.require(TOKENIZE, "context_from counts prompts with the candidate's own tokenizer")
    backend.load(candidate)
    try:
        counts = count_tokens(backend, prompts)
    finally:
        backend.unload()
    ctx = percentiles(counts)
    return ctx, (f"context from {path}: P50 {ctx.p50}, P95 {ctx.p95}, P99 {ctx.p99} tokens "
                 f"({len(counts)} prompts, {candidate.name}'s tokenizer)")


def gated_scenario(scenario, counted: dict, notes: list[str]):
    """The scenario the decision gates under: with the counted percentiles as its context_tokens
    when every candidate's tokenizer counted the prompts alike. Tokenizers that disagree are
    said, and the gates keep the bench's shortest prompt (decide reads one scenario)."""
    if scenario.context_tokens is not None or not counted:
        return scenario
    distinct = {c.model_dump_json() for c in counted.values()}
    if len(distinct) == 1:
        return scenario.model_copy(update={"context_tokens": next(iter(counted.values()))})
    notes.append("decide: the candidates' tokenizers count context_from differently; each was "
                 "benched at its own lengths, but the gates read the shortest bench prompt "
                 "(set context_tokens to gate at one set of lengths)")
    return scenario
