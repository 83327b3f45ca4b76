"""`tool_choice: "required"` (or a named function) enforced where the engine ignores it:
the pinned llama-server answers plain text for a chat template without tool calls
(SmolLM2's), saying nothing. Such a request is generated under a tool-call grammar instead — a
JSON schema `{"name": <one of the tools>, "arguments": <its parameters>}` with the tools listed
in a system message — and the JSON it writes is returned as the `tool_calls` the client asked
for. A template that does call tools is asked first; a non-streaming answer of its without a
tool call is retried under the grammar. Never plain text silently.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from edgepick.serve.pool.collect import replayed
from edgepick.serve.request_models import (ChatCompletionRequest, Function, ResponseFormat,
                                           SystemMessage)
from edgepick.serve.router_api import BadRequest, ServedResponse

_DROP = ("tools", "tool_choice", "parallel_tool_calls", "response_format", "stream_options")


def forced_functions(request: ChatCompletionRequest) -> list[Function] | None:
    """The functions one of which must be called, or None when the choice is free."""
    tools = request.tools or []
    choice = request.tool_choice
    if not tools or choice in (None, "auto", "none"):
        return None
    functions = [t.function for t in tools]
    if choice == "required":
        return functions
    name = choice.function.name
    picked = [f for f in functions if f.name == name]
    if not picked:
        raise BadRequest(f"'tool_choice.function.name': no tool named '{name}' in 'tools'",
                         param="tool_choice.function.name")
    return picked


def grammar_body(request: ChatCompletionRequest,
                 functions: list[Function]) -> ChatCompletionRequest:
    """The chat request that makes the model call one of `functions`, whatever its template."""
    branches = [{"type": "object", "properties": {
        "name": {"const": f.name},
        "arguments": f.parameters or {"type": "object"}},
        "required": ["name", "arguments"]} for f in functions]
    schema = branches[0] if len(branches) == 1 else {"anyOf": branches}
    listing = "\n".join(json.dumps(f.model_dump(include={"name", "description", "parameters"},
                                                exclude_none=True)) for f in functions)
    system = SystemMessage(role="system", content="Call exactly one of these tools. Answer "
                           "with one JSON object {\"name\": ..., \"arguments\": {...}} and "
                           "nothing else.\nTools:\n" + listing)
    fmt = ResponseFormat.model_validate({"type": "json_schema", "json_schema": {
        "name": "tool_call", "schema": schema}})
    # a field set to None is not sent (serve/pool/forwarded.py)
    return request.model_copy(update=dict({k: None for k in _DROP}, stream=False,
                                          response_format=fmt,
                                          messages=[system, *request.messages]))


def has_tool_call(answer: dict) -> bool:
    return all((c.get("message") or {}).get("tool_calls") for c in answer.get("choices") or [{}])


def as_tool_calls(answer: dict, max_tokens: Any) -> dict:
    """The grammar-constrained answer with each choice's JSON turned into a tool call."""
    out = dict(answer, choices=[])
    for choice in answer.get("choices") or ():
        text = (choice.get("message") or {}).get("content") or ""
        try:
            call = json.loads(text)
            name, args = call["name"], call["arguments"]
        except (ValueError, KeyError, TypeError):
            raise BadRequest(f"the tool call did not fit in max_tokens {max_tokens} "
                             f"(finish_reason {choice.get('finish_reason')}); ask for more",
                             param="max_tokens") from None
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}]}
        out["choices"].append(dict(choice, message=message, finish_reason="tool_calls"))
    return out


async def forward_forced(pool, request: ChatCompletionRequest, stream: bool, deadline: float,
                         functions: list[Function]) -> ServedResponse:
    """A chat request whose tool call is required, answered with one (serve/pool/edge.py)."""
    caps = ((await pool.props()).get("chat_template_caps") or {})
    if caps.get("supports_tool_calls") and not stream:
        resp = await pool.forward("chat", request, False, deadline, forced=False)
        if has_tool_call(resp.body or {}):
            return resp
    resp = await pool.forward("chat", grammar_body(request, functions), False, deadline)
    answer = as_tool_calls(resp.body or {}, request.max_tokens)
    if not stream:
        return ServedResponse(body=answer, headers=resp.headers, queue_wait_s=resp.queue_wait_s)
    # the app drops the usage chunk unless it was asked for
    return replayed(answer, "chat", resp.headers, resp.queue_wait_s)
