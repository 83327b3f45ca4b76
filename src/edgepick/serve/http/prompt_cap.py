"""The prompt's own bounds: its token ids below the vocabulary, and its length in tokens under
`--max-prompt-tokens` (a 400 `context_length_exceeded` quoting both, as OpenAI answers; the
schema states the cap as `x-edgepick-max-prompt-tokens`, serve/http/openapi_doc.py)."""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from edgepick.serve.router_api import BadRequest, Kind


def prompt_text(kind: Kind, body: dict) -> str:
    """The text the client sends to the model (chat: every message's text content)."""
    if kind == "chat":
        parts = []
        for m in body["messages"]:
            content = m.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [p.get("text", "") for p in content if isinstance(p, dict)]
        return "\n".join(parts)
    prompt = body["prompt"]
    if isinstance(prompt, str):
        return prompt
    return "\n".join(prompt)


def id_count(kind: Kind, body: dict) -> int | None:
    """A completion prompt of token ids (or lists of them): their count, which is exact."""
    prompt = body.get("prompt") if kind == "completion" else None
    if not isinstance(prompt, list) or all(isinstance(p, str) for p in prompt):
        return None
    return sum(len(p) if isinstance(p, list) else 1 for p in prompt)


async def check_prompt_cap(kind: Kind, body: dict, cap: int,
                           count_tokens: Callable[[str], Awaitable[int]]) -> None:
    n = id_count(kind, body)
    if n is None:
        text = prompt_text(kind, body)
        # a token is at least one byte: only a prompt longer in bytes than the cap is counted
        n = await count_tokens(text) if len(text.encode()) > cap else 0
    if n > cap:
        raise BadRequest(f"prompt of {n} tokens is over this server's limit of {cap} prompt "
                         "tokens (--max-prompt-tokens)",
                         param="messages" if kind == "chat" else "prompt",
                         code="context_length_exceeded")


def check_ids(prompt: Any, n_vocab: int | None, param: str) -> None:
    """Token ids in a prompt (a list of ids, or of lists of ids) below the vocabulary."""
    if not n_vocab or not isinstance(prompt, list):
        return
    for item in prompt:
        for t in item if isinstance(item, list) else (item,):
            if isinstance(t, int) and t >= n_vocab:
                raise BadRequest(f"'{param}': token id {t} is not below the vocabulary size "
                                 f"{n_vocab}", param=param)
