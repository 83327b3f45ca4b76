"""The body serve forwards, shaped from the checked request model: deploy.yaml's sampling
applied (serve/http/generate.py), then written for the engine once, nulls dropped
(llama-server reads `null` as a type error)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from edgepick.serve.request_models import value


def wire(request: BaseModel | dict) -> dict:
    """The request as the engine reads it: the fields the client sent (llama-server's own
    among them) and the ones serve set, under their JSON names, nulls dropped."""
    if isinstance(request, dict):
        return without_nulls(request)
    return without_nulls(request.model_dump(mode="json", by_alias=True, exclude_unset=True))


def engine_payload(request: BaseModel, model: str, streamed: bool) -> dict:
    """What is sent to the engine (serve/pool/edge.py, as JSON): the request for the served
    model, asking for a stream with its usage when serve reads the answer as one."""
    payload = dict(wire(request), model=model)
    if streamed:
        payload["stream"] = True
        payload["stream_options"] = {"include_usage": True}
    return payload


def without_nulls(body: dict) -> dict:
    """`null` is "not given" in OpenAI's API, and llama-server's JSON reader refuses it where it
    wants a string (`encoding_format: null`, `response_format.json_schema: null`): such fields
    are dropped, at the top, in `response_format` and its wrapper, `stream_options` and each
    message and its tool calls (an assistant message left with neither content nor tool calls
    gets empty content, which llama-server wants). A JSON schema keeps its nulls (`default:
    null` means something there)."""
    out = _no_nulls(body, "stream_options")
    if "response_format" in out:
        out["response_format"] = _no_nulls(out["response_format"], "json_schema")
    if isinstance(out.get("tools"), list):  # a function's `parameters` is a schema: kept
        out["tools"] = [_no_nulls(t, "function") for t in out["tools"]]
    if isinstance(out.get("messages"), list):
        out["messages"] = [_message(m) for m in out["messages"]]
    return out


def _no_nulls(d: Any, *inner: str) -> Any:
    """A dict without its null fields, nor those of its `inner` dicts (one level down, no
    further: a schema below keeps its nulls); anything else as it is."""
    if not isinstance(d, dict):
        return d
    out = {k: v for k, v in d.items() if v is not None}
    for key in inner:
        if isinstance(out.get(key), dict):
            out[key] = _no_nulls(out[key])
    return out


def _message(m: Any) -> Any:
    if not isinstance(m, dict):
        return m
    out = _no_nulls(m)
    if isinstance(out.get("tool_calls"), list):
        # `type` defaults to "function" in OpenAI's API; llama-server wants it written
        out["tool_calls"] = [dict({"type": "function"}, **_no_nulls(c, "function"))
                             if isinstance(c, dict) else c for c in out["tool_calls"]]
    if out.get("role") == "assistant" and "content" not in out and not out.get("tool_calls"):
        out["content"] = ""  # llama-server wants one of the two; OpenAI's content is optional
    return out


def apply_sampling(request: BaseModel, sampling: dict,
                   locked: bool) -> tuple[BaseModel, list[str]]:
    """deploy.yaml's `sampling` as the request's defaults; with
    `lock_sampling` they replace what the client sent. Returns the request and the fields the
    lock overrode (for the `x-edgepick-sampling` header)."""
    if not sampling:
        return request, []
    updates: dict[str, Any] = {}
    overridden = []
    for key, chosen in sampling.items():
        given = value(request, key)
        if given is None:
            updates[key] = chosen
        elif locked and given != chosen:
            updates[key] = chosen
            overridden.append(key)
    return request.model_copy(update=updates), overridden
