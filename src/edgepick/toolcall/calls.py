"""Reading a tool call out of a model's reply, shared by the `tool_call` scorer and the guard.

Seed 004 §4.1: the model either calls one tool or answers without one. A reply is read as:
- a call: a JSON object `{"name": ..., "arguments": {...}}` found in the reply, possibly inside
  a ``` fence, `<tool_call>` tags (Hermes/Qwen templates), after `[TOOL_CALLS]` (Mistral) or
  `<|python_tag|>` (Llama 3.1), possibly in OpenAI's wire shape
  (`{"type": "function", "function": {"name", "arguments": "<JSON string>"}}`) or a list of
  calls (the first is taken), with `parameters` accepted for `arguments` (Llama 3.1);
- no call: plain text with no sign of a call;
- unparseable: the reply tries to call (a brace, a call tag, a `"name"` key) but no call object
  can be read from it. Strict JSON only: the guard, not this reader, repairs slips.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import jsonschema

CALL_TAGS = ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function_call>")
_TAG_RE = re.compile(r"</?tool_call>|\[TOOL_CALLS\]|<\|python_tag\|>|</?function_call>")
_FENCE_RE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.S)


@dataclass
class ParsedCall:
    kind: Literal["call", "none", "unparseable"]
    name: str | None = None
    arguments: Any = None  # normally a dict; whatever the model gave otherwise
    wrapped: bool = False  # there was text around the call
    n_calls: int = 0  # calls in the reply (only the first is used)
    problem: str = ""

    def as_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "arguments": self.arguments,
                "wrapped": self.wrapped, "n_calls": self.n_calls, "problem": self.problem}


def looks_like_call(text: str) -> bool:
    """A reply that tries to call a tool, parseable or not."""
    return "{" in text or any(t in text for t in CALL_TAGS) or '"name"' in text


def first_json(text: str) -> tuple[Any, tuple[int, int]] | None:
    """The first JSON object or array that parses, scanning from each `{` or `[`."""
    dec = json.JSONDecoder()
    for m in re.finditer(r"[\[{]", text):
        try:
            obj, end = dec.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, (dict, list)) and obj:
            return obj, (m.start(), end)
    return None


def normalise_call(obj: Any) -> tuple[str | None, Any, int, str]:
    """(name, arguments, number of calls, problem) from a decoded JSON value."""
    calls = obj if isinstance(obj, list) else [obj]
    if isinstance(obj, dict) and isinstance(obj.get("tool_calls"), list):
        calls = obj["tool_calls"]
    calls = [c for c in calls if isinstance(c, dict)]
    if not calls:
        return None, None, 0, "no call object in the JSON"
    call = calls[0]
    if isinstance(call.get("function"), dict):
        call = call["function"]
    name = call.get("name")
    if not isinstance(name, str) or not name.strip():
        return None, None, len(calls), "the JSON has no tool name ('name')"
    args = call.get("arguments", call.get("parameters", {}))
    if isinstance(args, str):
        # OpenAI's wire shape carries the arguments as a JSON string.
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            pass  # left as a string: the schema check reports it
    return name, args, len(calls), ""


def parse_call(text: str) -> ParsedCall:
    """Read one reply; see the module docstring for the accepted shapes."""
    stripped = text.strip()
    if not stripped:
        return ParsedCall("none")
    for body in [m.group(1) for m in _FENCE_RE.finditer(stripped)] + [stripped]:
        found = first_json(_TAG_RE.sub(" ", body) if body is stripped else body)
        if found is None:
            continue
        obj, span = found
        name, args, n, problem = normalise_call(obj)
        if name is None:
            return ParsedCall("unparseable", n_calls=n, problem=problem)
        if body is stripped:
            untagged = _TAG_RE.sub(" ", stripped)
            wrapped = bool(untagged[:span[0]].strip() or untagged[span[1]:].strip())
        else:
            wrapped = True  # inside a fence: the fence itself is text around the call
        return ParsedCall("call", name=name, arguments=args, wrapped=wrapped, n_calls=n)
    if looks_like_call(stripped):
        return ParsedCall("unparseable", problem="the reply tries to call a tool but holds no "
                                                 "parseable JSON call")
    return ParsedCall("none")


def tool_schemas(tools: list[dict] | None) -> dict[str, dict]:
    """Offered tool name → its JSON-schema parameters."""
    out = {}
    for t in tools or []:
        fn = t.get("function", t)
        out[fn["name"]] = fn.get("parameters") or {"type": "object"}
    return out


def schema_errors(schema: dict, value: Any) -> list[str]:
    v = jsonschema.validators.validator_for(schema)(schema)
    return [(".".join(str(p) for p in e.absolute_path) + ": " if e.absolute_path else "")
            + e.message for e in sorted(v.iter_errors(value), key=lambda e: list(e.path))]
