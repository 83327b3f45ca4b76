"""Reading and re-shaping OpenAI answers for the router: the text and token log-probabilities of
a complete answer, and a complete answer replayed as an SSE stream (how a buffered cascade
answers a streaming client once confidence is known)."""

from __future__ import annotations

import json
import time
from typing import AsyncIterator


def answer_text(kind: str, body: dict) -> str:
    choice = (body.get("choices") or [{}])[0]
    if kind == "chat":
        return str((choice.get("message") or {}).get("content") or "")
    return str(choice.get("text") or "")


def answer_logprobs(body: dict) -> list[float]:
    """Token log-probabilities, from the chat shape (`logprobs.content[].logprob`) or the
    completions shape (`logprobs.token_logprobs`, or llama-server's `content` there too)."""
    lp = (body.get("choices") or [{}])[0].get("logprobs") or {}
    if isinstance(lp.get("content"), list):
        return [float(x["logprob"]) for x in lp["content"] if x.get("logprob") is not None]
    return [float(x) for x in lp.get("token_logprobs") or [] if x is not None]


def ask_logprobs(kind: str, body: dict) -> tuple[dict, bool]:
    """The body with token log-probabilities requested, and whether the client had asked."""
    asked = bool(body.get("logprobs"))
    if asked:
        return body, True
    # One alternative per token is the cheapest request llama-server accepts (it computes
    # top_logprobs, default 20, for every generated token).
    if kind == "chat":
        return dict(body, logprobs=True, top_logprobs=1), False
    return dict(body, logprobs=1), False


def strip_logprobs(body: dict) -> dict:
    for choice in body.get("choices") or []:
        choice.pop("logprobs", None)
    return body


def _event(obj: dict | str) -> bytes:
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


async def replay_stream(kind: str, body: dict) -> AsyncIterator[bytes]:
    """A complete answer as the stream an OpenAI-compatible server would have sent."""
    choice = (body.get("choices") or [{}])[0]
    base = {"id": body.get("id", f"edgepick-{time.time_ns()}"),
            "created": body.get("created", int(time.time())), "model": body.get("model", "")}
    text = answer_text(kind, body)
    finish = choice.get("finish_reason") or "stop"
    if kind == "chat":
        base["object"] = "chat.completion.chunk"
        yield _event(dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                          "finish_reason": None}]))
        if text:
            yield _event(dict(base, choices=[{"index": 0, "delta": {"content": text},
                                              "finish_reason": None}]))
        yield _event(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
    else:
        base["object"] = "text_completion"
        yield _event(dict(base, choices=[{"index": 0, "text": text, "finish_reason": None}]))
        yield _event(dict(base, choices=[{"index": 0, "text": "", "finish_reason": finish}]))
    if body.get("usage"):
        yield _event(dict(base, choices=[], usage=body["usage"]))
    yield _event("[DONE]")
