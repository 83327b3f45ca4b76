"""The guard between a model's proposed call and the system (seed 004 §4.4, §6.4).

Every proposal is checked against the tool's JSON schema before anything runs. Harmless slips
are repaired, and each repair is logged and recorded: stray whitespace or quotes around a
tool name, an argument name or a string value; single-quoted or typographic-quoted JSON; a
trailing comma; a number or a boolean given as a string; a whole number written 3.0; an enum
value in the wrong case. Anything else (no parseable call, an unknown tool, arguments that
still break the schema) is refused with an error the model can act on.
"""

from __future__ import annotations

import ast
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from edgepick.toolcall.calls import (ParsedCall, first_json, normalise_call, parse_call,
                                  schema_errors)

log = logging.getLogger("edgepick.toolcall.guard")
Status = Literal["call", "answer", "unparseable", "unknown_tool", "invalid_arguments"]
_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "＂": '"'})
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


@dataclass
class Repair:
    kind: str  # whitespace | quotes | trailing_comma | number_as_string | ...
    detail: str


@dataclass
class GuardVerdict:
    status: Status
    name: str | None = None
    arguments: dict | None = None
    repairs: list[Repair] = field(default_factory=list)
    error: str | None = None  # what the model is told when the call is refused
    parsed: ParsedCall | None = None

    @property
    def refused(self) -> bool:
        return self.status not in ("call", "answer")


def _literal(text: str):
    """The outermost {...} of `text` read as a Python literal (single quotes, True/None):
    parsed, never evaluated."""
    start, end = text.find("{"), text.rfind("}")
    if not 0 <= start < end:
        return None
    try:
        return ast.literal_eval(text[start:end + 1])
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _types(schema: dict) -> set[str]:
    t = schema.get("type")
    return set(t) if isinstance(t, list) else {t} if isinstance(t, str) else set()


class Guard:
    """`check(reply, tools)` → a verdict; `tools` maps tool names to JSON-schema parameters."""

    def __init__(self, tools: dict[str, dict]) -> None:
        self.tools = tools

    def check(self, reply: str) -> GuardVerdict:
        repairs: list[Repair] = []
        parsed = parse_call(reply)
        if parsed.kind == "unparseable":
            parsed = self._repair_text(reply, repairs) or parsed
        if parsed.kind == "none":
            return GuardVerdict("answer", parsed=parsed)
        if parsed.kind == "unparseable":
            return self._refuse("unparseable", parsed, repairs,
                                f"your reply is not a valid tool call ({parsed.problem}). Reply "
                                'with only {"name": "<tool>", "arguments": {...}}, or answer in '
                                "plain text if no tool is needed.")
        name = self._tool_name(parsed.name, repairs)
        if name is None:
            return self._refuse("unknown_tool", parsed, repairs,
                                f"there is no tool named '{parsed.name}'. Available tools: "
                                f"{', '.join(self.tools)}.")
        args = self._arguments(parsed.arguments, self.tools[name], repairs)
        errs = schema_errors(self.tools[name], args) if isinstance(args, dict) else \
            ["arguments must be a JSON object"]
        if errs:
            return self._refuse("invalid_arguments", parsed, repairs,
                                f"the arguments for '{name}' are invalid: {'; '.join(errs[:3])}. "
                                f"Its parameters: {json.dumps(self.tools[name], ensure_ascii=False)}",
                                name=name)
        for r in repairs:
            log.info("repaired %s: %s", r.kind, r.detail)
        return GuardVerdict("call", name=name, arguments=args, repairs=repairs, parsed=parsed)

    @staticmethod
    def _refuse(status: Status, parsed: ParsedCall, repairs: list[Repair], error: str,
                name: str | None = None) -> GuardVerdict:
        log.info("refused (%s): %s", status, error)
        return GuardVerdict(status, name=name or parsed.name, repairs=repairs, error=error,
                            parsed=parsed)

    # -- repairs ---------------------------------------------------------------------------
    def _repair_text(self, reply: str, repairs: list[Repair]) -> ParsedCall | None:
        text = reply
        fixed = text.translate(_QUOTES)
        if fixed != text:
            repairs.append(Repair("quotes", "typographic quotes read as ASCII quotes"))
            text = fixed
        fixed = _TRAILING_COMMA.sub(r"\1", text)
        if fixed != text:
            repairs.append(Repair("trailing_comma", "a comma before a closing bracket dropped"))
            text = fixed
        p = parse_call(text)
        if p.kind == "call":
            return p
        # Single-quoted, Python-style JSON ({'name': 'x'}): read it as a literal, never run it.
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            obj = _literal(text)
            if isinstance(obj, (dict, list)):
                name, args, n, problem = normalise_call(obj)
                if name is not None:
                    repairs.append(Repair("quotes", "single-quoted JSON read as JSON"))
                    return ParsedCall("call", name=name, arguments=args, n_calls=n,
                                      wrapped=bool(text[:start].strip() or text[end + 1:].strip()))
        return None

    def _tool_name(self, name: str, repairs: list[Repair]) -> str | None:
        if name in self.tools:
            return name
        bare = name.strip().strip("`'\"").strip()
        if bare in self.tools:
            repairs.append(Repair("whitespace", f"tool name {name!r} read as '{bare}'"))
            return bare
        folded = [t for t in self.tools if t.casefold() == bare.casefold()]
        if len(folded) == 1:
            repairs.append(Repair("case", f"tool name {name!r} read as '{folded[0]}'"))
            return folded[0]
        return None

    def _arguments(self, args: Any, schema: dict, repairs: list[Repair]) -> Any:
        if isinstance(args, str):
            found = first_json(args.translate(_QUOTES))
            obj = found[0] if found is not None else _literal(args.translate(_QUOTES))
            if isinstance(obj, dict):
                repairs.append(Repair("quotes", "arguments given as a quoted string read as JSON"))
                args = obj
        if not isinstance(args, dict):
            return args
        props = schema.get("properties") or {}
        out: dict = {}
        for key, value in args.items():
            k = key
            if key not in props and isinstance(key, str) and key.strip().strip("'\"") in props:
                k = key.strip().strip("'\"")
                repairs.append(Repair("whitespace", f"argument name {key!r} read as '{k}'"))
            out[k] = self._value(k, value, props.get(k) or {}, repairs)
        return out

    def _value(self, key: str, value: Any, schema: dict, repairs: list[Repair]) -> Any:
        types = _types(schema)
        if isinstance(value, str) and "string" not in types:
            s = value.strip().strip("'\"").strip()
            if types & {"integer", "number"} and _NUMBER.match(s):
                num = float(s)
                new = int(num) if ("integer" in types and num.is_integer()) or \
                    ("number" not in types and num.is_integer()) else num
                repairs.append(Repair("number_as_string", f"'{key}': {value!r} read as {new}"))
                return new
            if "boolean" in types and s.lower() in ("true", "false"):
                repairs.append(Repair("boolean_as_string", f"'{key}': {value!r} read as "
                                                           f"{s.lower()}"))
                return s.lower() == "true"
        if isinstance(value, float) and "integer" in types and "number" not in types \
                and value.is_integer():
            repairs.append(Repair("whole_number", f"'{key}': {value!r} read as {int(value)}"))
            return int(value)
        if isinstance(value, str) and "string" in types:
            s = value.strip()
            if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
                s = s[1:-1].strip()
            if s != value:
                repairs.append(Repair("whitespace" if s == value.strip() else "quotes",
                                      f"'{key}': {value!r} read as {s!r}"))
            enum = schema.get("enum")
            if isinstance(enum, list) and s not in enum:
                hits = [e for e in enum if isinstance(e, str) and e.casefold() == s.casefold()]
                if len(hits) == 1:
                    repairs.append(Repair("case", f"'{key}': {s!r} read as {hits[0]!r}"))
                    s = hits[0]
            return s
        return value
