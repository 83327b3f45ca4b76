"""What a request must satisfy before it reaches a router: a key, a bounded body, bounded
max_tokens and prompt, and no field that points the engine at a file (seed 000 §5.2)."""

from __future__ import annotations

import hmac
import json
from typing import Awaitable, Callable

from starlette.requests import Request

from edgepick.serve.router_api import BadRequest, Kind, ServeError


class Unauthorized(ServeError):
    status, code = 401, "invalid_api_key"


class BodyTooLarge(ServeError):
    status, code = 413, "request_too_large"


# llama-server fields that would pick a slot, save state or load adapters: never from a client
ENGINE_ONLY_FIELDS = ("id_slot", "slot_id", "lora", "slot_save_path", "filename")
MAX_TOKEN_FIELDS = ("max_tokens", "max_completion_tokens", "n_predict")


def check_key(request: Request, api_key: str | None) -> None:
    if not api_key:
        return
    auth = request.headers.get("authorization", "")
    given = auth[7:] if auth[:7].lower() == "bearer " else request.headers.get("x-api-key", "")
    if not hmac.compare_digest(given.encode(), api_key.encode()):
        raise Unauthorized("missing or wrong API key (send it as 'Authorization: Bearer KEY')")


async def read_json(request: Request, limit: int) -> dict:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"request body of {declared} bytes is over the limit of {limit} "
                           "bytes (--max-body)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"request body is over the limit of {limit} bytes (--max-body)")
        chunks.append(chunk)
    try:
        body = json.loads(b"".join(chunks))
    except ValueError as exc:
        raise BadRequest(f"request body is not valid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    return body


def prompt_text(kind: Kind, body: dict) -> str:
    """The text the client sends to the model (chat: every message's text content)."""
    if kind == "chat":
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise BadRequest("'messages' must be a non-empty list")
        parts = []
        for m in msgs:
            content = m.get("content") if isinstance(m, dict) else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [p.get("text", "") for p in content if isinstance(p, dict)]
        return "\n".join(parts)
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
        return "\n".join(prompt)
    if isinstance(prompt, list):  # token ids: their count is exact
        return " " * sum(len(p) if isinstance(p, list) else 1 for p in prompt)
    raise BadRequest("'prompt' must be a string, a list of strings or token ids")


async def check_body(kind: Kind, body: dict, *, max_tokens: int, max_prompt_tokens: int,
                     count_tokens: Callable[[str], Awaitable[int]]) -> dict:
    """The body to route: caps applied, `max_tokens` set when absent; raises BadRequest."""
    for name in ENGINE_ONLY_FIELDS:
        if name in body:
            raise BadRequest(f"field '{name}' is not accepted: this server chooses its own "
                             "slots, files and models")
    asked = [(k, body[k]) for k in MAX_TOKEN_FIELDS if body.get(k) is not None]
    for key, value in asked:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise BadRequest(f"'{key}' must be a positive integer")
        if value > max_tokens:
            raise BadRequest(f"'{key}' {value} is over this server's limit of {max_tokens} "
                             "tokens (--max-tokens)")
    body = {k: v for k, v in body.items() if k not in ("n_predict", "max_completion_tokens")}
    body["max_tokens"] = min((v for _, v in asked), default=max_tokens)
    text = prompt_text(kind, body)
    # a token is at least one byte, so only prompts longer in bytes than the cap are counted
    if len(text.encode()) > max_prompt_tokens:
        n = await count_tokens(text)
        if n > max_prompt_tokens:
            raise BadRequest(f"prompt of {n} tokens is over this server's limit of "
                             f"{max_prompt_tokens} prompt tokens (--max-prompt-tokens)")
    # the model is the server's choice (registry, policy); the client's name is only a label
    body.pop("model", None)
    return body
