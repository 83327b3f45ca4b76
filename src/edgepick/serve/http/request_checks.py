"""What a request must satisfy before it reaches a router: a key, a bounded body read in bounded
time, JSON without NaN, lone surrogates or absurd nesting, OpenAI's request types, bounded
max_tokens and prompt, and no field that points the engine at a file (seed 000 §5.2)."""

from __future__ import annotations

import asyncio
import hmac
import json
import math
from typing import Any, Awaitable, Callable

from starlette.requests import ClientDisconnect, Request

from edgepick.serve.errors import (BadRequest, BodyTooLarge, ClientGone, RequestTimeout,
                                   Unauthorized, UnsupportedMediaType)
from edgepick.serve.http.constraints import check_constraints
from edgepick.serve.http.prompt_cap import check_ids, check_prompt_cap
from edgepick.serve.request_models import ENGINE_ONLY_FIELDS, OpenAIRequest
from edgepick.serve.router_api import Kind
from edgepick.serve.validation import validate

MAX_TOKEN_FIELDS = ("max_tokens", "max_completion_tokens", "n_predict")
ECHO_DEFAULT_TOKENS = 16  # OpenAI's max_tokens default for /v1/completions
MAX_DEPTH = 64  # OpenAI bodies nest a handful of levels; a JSON schema in tools a few dozen


def check_key(request: Request, api_key: str | None) -> None:
    if not api_key:
        return
    auth = request.headers.get("authorization", "")
    given = auth[7:] if auth[:7].lower() == "bearer " else request.headers.get("x-api-key", "")
    if not hmac.compare_digest(given.encode(), api_key.encode()):
        raise Unauthorized("missing or wrong API key (send it as 'Authorization: Bearer KEY')")


async def read_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The body, at most `limit` bytes, in at most `timeout_s` seconds (a Content-Length larger
    than what arrives would otherwise hold the connection forever)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"request body of {declared} bytes is over the limit of {limit} "
                           "bytes (--max-body)")
    chunks, size = [], 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise BodyTooLarge(f"request body is over the limit of {limit} bytes "
                                       "(--max-body)")
                chunks.append(chunk)
    except TimeoutError:
        raise RequestTimeout(f"request body not complete after {timeout_s:g} s ({size} bytes "
                             f"of {declared or 'unknown'} arrived; --body-timeout)") from None
    except ClientDisconnect:
        raise ClientGone("the client closed the connection while sending the body") from None
    return b"".join(chunks)


def check_json_type(request: Request) -> None:
    """Bodies are JSON in UTF-8 (RFC 8259 §8.1), said so by the Content-Type: anything else is
    a 415, not a guess (json.loads alone would also read UTF-16 and UTF-32)."""
    given = request.headers.get("content-type", "")
    media, _, params = given.partition(";")
    if media.strip().lower() != "application/json":
        raise UnsupportedMediaType(f"Content-Type must be application/json, not "
                                   f"'{printable(given) or 'none'}'")
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in (
                "utf-8", "utf8"):
            raise UnsupportedMediaType(f"the body must be UTF-8, not charset "
                                       f"'{printable(value.strip())}'")


async def read_json(request: Request, limit: int, timeout_s: float) -> dict:
    """The request's JSON object body: type checked, size and time bounded, parsed strictly."""
    check_json_type(request)
    return parse_json(await read_body(request, limit, timeout_s))


def printable(text: str) -> str:
    """`text` safe to quote in a message: lone surrogates (which no encoder takes) escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _number(text: str) -> float | int:
    """A JSON number with a fraction or exponent: an integral one (`3.0`, `1e3`) is the integer
    it equals, as JSON Schema has it (an `integer` field takes 3.0), up to 2^53."""
    value = float(text)
    if value.is_integer() and abs(value) <= 2**53:
        return int(value)
    return value


def parse_json(raw: bytes) -> dict:
    """JSON as RFC 8259 has it: no NaN/Infinity, nesting bounded, text that is valid Unicode."""
    try:
        # UTF-8 only: json.loads(bytes) would also detect and read UTF-16 and UTF-32
        body = json.loads(raw.decode("utf-8"), parse_constant=_no_constant,
                          parse_float=_number)
    except RecursionError:
        raise BadRequest(f"request body nests deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError as exc:
        raise BadRequest(f"request body is not UTF-8 (byte {exc.start}: {exc.reason})",
                         code="invalid_json") from None
    except ValueError as exc:
        raise BadRequest(f"request body is not valid JSON ({exc})", code="invalid_json") from None
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object", code="invalid_json")
    _check_tree(body)
    return body


def _check_tree(body: dict) -> None:
    """Depth, numbers too large for a float, and lone surrogates (`"\\ud800"` parses, then
    fails every encoder), iteratively."""
    stack: list[tuple[Any, str, int]] = [(body, "", 1)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadRequest(f"request body nests deeper than {MAX_DEPTH} levels",
                             param=where or None)
        if isinstance(node, dict):
            for k, v in node.items():
                path = f"{where}.{k}" if where else str(k)
                _text(k, path)
                stack.append((v, path, depth + 1))
        elif isinstance(node, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(node))
        elif isinstance(node, str):
            _text(node, where)
        elif isinstance(node, float) and not math.isfinite(node):  # 1e999 parses as inf
            raise BadRequest(f"'{where}' is not a finite number", param=where or None)


def _text(s: str, where: str) -> None:
    if s.isascii():
        return
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        where = printable(where)  # the path itself may hold the surrogate (a key)
        raise BadRequest(f"'{where}' holds a lone UTF-16 surrogate, which is not text",
                         param=where or None) from None


def check_last_message(messages: list[dict]) -> None:
    """The end of a conversation the engine can continue (request_models.LAST_MESSAGE)."""
    last = len(messages) - 1
    if messages[last].get("role") != "assistant":
        return
    if messages[last].get("tool_calls"):
        raise BadRequest(f"'messages[{last}]': a final assistant message with 'tool_calls' "
                         "must be followed by the tool messages answering them",
                         param=f"messages[{last}]")
    if last and messages[last - 1].get("role") == "assistant":
        raise BadRequest(f"'messages[{last}]': a final assistant message is continued, and "
                         "only one may end the list", param=f"messages[{last}]")


def _listed(prompt: Any) -> list:
    return prompt if isinstance(prompt, list) else [prompt]


async def check_body(kind: Kind, body: dict, *, max_tokens: int, max_prompt_tokens: int,
                     count_tokens: Callable[[str], Awaitable[int]],
                     max_n: int | None = None, n_vocab: int | None = None,
                     max_prompts: int | None = None) -> OpenAIRequest:
    """The request to route, as its typed model: validated, caps applied, `max_tokens` set
    when absent; raises BadRequest naming the field."""
    for name in ENGINE_ONLY_FIELDS:
        if name in body:
            raise BadRequest(f"field '{name}' is not accepted: this server chooses its own "
                             "slots, files and models", param=name, code="unsupported_parameter")
    request = validate(kind, body)
    n = body.get("n")
    if max_n is not None and isinstance(n, int) and n > max_n:
        raise BadRequest(f"this request asks for {n} completions and this server decodes at "
                         f"most {max_n} at once (--slots); ask for at most {max_n}", param="n")
    check_constraints(kind, body)
    if kind == "chat" and body.get("top_logprobs") is not None \
            and body.get("logprobs") is not True:
        raise BadRequest("'top_logprobs' needs 'logprobs': true", param="top_logprobs")
    if kind == "chat":
        check_last_message(body["messages"])
    if kind == "chat" and body.get("stream") is True and body.get("tools") \
            and body.get("logprobs") is True:
        raise BadRequest("'logprobs' is not supported with 'tools' on a stream by this engine; "
                         "send 'stream': false", param="logprobs")
    if kind == "completion":
        check_ids(body.get("prompt"), n_vocab, "prompt")
        listed = body.get("prompt")  # a list of token ids is one prompt
        if max_prompts is not None and isinstance(listed, list) and len(listed) > max_prompts \
                and not isinstance(listed[0], int):
            raise BadRequest(f"a completion lists at most {max_prompts} prompts on this server "
                             f"(--max-prompts), got {len(listed)}", param="prompt")
        if isinstance(n, int) and n > 1 and body.get("echo") is not True \
                and any(p == "" for p in _listed(body.get("prompt"))):
            raise BadRequest("an empty prompt cannot be completed more than once ('n' > 1): "
                             "the engine's other completions of it would wait forever; send "
                             "a non-empty prompt or 'n': 1", param="prompt")
    asked = [(k, body[k]) for k in MAX_TOKEN_FIELDS if body.get(k) is not None]
    # max_tokens 0 is lm-eval's "score the prompt, write nothing" (echo with logprobs)
    scoring = kind == "completion" and body.get("echo") is True
    for key, value in asked:
        if not isinstance(value, int) or isinstance(value, bool) or value < (0 if scoring else 1):
            raise BadRequest(f"'{key}' must be a positive integer", param=key)
        if value > max_tokens:
            raise BadRequest(f"'{key}' {value} is over this server's limit of {max_tokens} "
                             "tokens (--max-tokens)", param=key)
    await check_prompt_cap(kind, body, max_prompt_tokens, count_tokens)
    # one limit, `max_tokens`: absent, the server's cap, or OpenAI's own default of 16 for an
    # echoed completion; the model is the server's choice (registry, policy), the client's
    # name only a label; a field set to None is not sent
    cap = min((v for _, v in asked),
              default=min(ECHO_DEFAULT_TOKENS, max_tokens) if scoring else max_tokens)
    dropped = {k: None for k in ("n_predict", "max_completion_tokens", "model") if k in body}
    return request.model_copy(update=dict(dropped, max_tokens=cap))
