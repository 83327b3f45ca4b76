"""The safety check every JSON schema and GBNF grammar passes before an engine builds a grammar
from it: satisfiable, and small enough to compile. Below every user: evaluate (an item's schema),
the grammar conversion (backends/llama_cpp_grammar.py), deploy.yaml's per-task constraints
(records/deploy.py) and serve (a request's `response_format`, `json_schema`, `grammar`, tools'
`parameters`: serve/http/constraints.py) all call it, so no path hands the engine an unchecked one.

Why this is needed (docs/serve.md, "Constrained output"): the pinned llama.cpp turns a schema's
`minLength`/`maxLength` (and `minItems`/`maxItems`, a pattern's `{m,n}`) into a GBNF repetition
`item{m,n}` (common/json-schema-to-grammar.cpp `build_repetition`), and its grammar parser
expands a repetition into `max - min` optional rules, counted in an unsigned 64-bit integer
(src/llama-grammar.cpp `handle_repetitions`, `n_opt = max_times - min_times`). With min above
max that count wraps to about 2^64: the engine's main loop adds rules until memory runs out,
while its HTTP thread goes on answering /health. No schema or grammar that reaches the engine
may ask for that, or for more rules than a small device can build.
"""

from __future__ import annotations

import re
from typing import Any

from edgepick.errors import EdgepickError

MAX_DEPTH = 24  # nested sub-schemas
MAX_NODES = 4096  # sub-schemas in one schema
MAX_PROPERTIES = 256  # properties (or prefixItems) of one object
MAX_ENUM = 512  # values of one enum, branches of one anyOf/oneOf/allOf
MAX_REPEAT = 2000  # llama-grammar's MAX_REPETITION_THRESHOLD: a larger minimum is refused there
MAX_GRAMMAR_RULES = 1024  # `::=` definitions in a GBNF grammar
MAX_GRAMMAR_BYTES = 64 * 1024
_PAIRS = (("minLength", "maxLength"), ("minItems", "maxItems"),
          ("minProperties", "maxProperties"), ("minContains", "maxContains"))
_BRANCHES = ("anyOf", "oneOf", "allOf")
_SUBSCHEMA = ("items", "additionalProperties", "not", "contains", "if", "then", "else",
              "unevaluatedProperties", "unevaluatedItems", "propertyNames")
_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


class ConstraintError(EdgepickError):
    """A schema or grammar refused: `param` names the place (`schema.minLength`), `code` is
    serve's error code for it (`invalid_schema`, `invalid_grammar`)."""

    def __init__(self, message: str, *, param: str, code: str) -> None:
        super().__init__(message)
        self.message, self.param, self.code = message, param, code


def _bad(field: str, where: str, problem: str) -> ConstraintError:
    param = f"{field}.{where}" if where else field
    return ConstraintError(f"'{param}': {problem}", param=param, code="invalid_schema")


def _count(node: dict, key: str, field: str, where: str) -> int | None:
    value = node.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) \
            or value < 0:
        raise _bad(field, _join(where, key), f"{key} must be a non-negative integer")
    return int(value)


def _number(node: dict, key: str, field: str, where: str) -> float | None:
    value = node.get(key)
    if value is None or isinstance(value, bool):
        if isinstance(value, bool):
            raise _bad(field, _join(where, key), f"{key} must be a number")
        return None
    if not isinstance(value, (int, float)):
        raise _bad(field, _join(where, key), f"{key} must be a number")
    return value


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _check_node(node: dict, field: str, where: str) -> None:
    for lo_key, hi_key in _PAIRS:
        lo = _count(node, lo_key, field, where)
        hi = _count(node, hi_key, field, where)
        if lo is not None and lo > MAX_REPEAT:
            raise _bad(field, _join(where, lo_key), f"{lo_key} {lo} is over {MAX_REPEAT}, the "
                       "most repetitions the engine's grammar can require")
        if lo is not None and hi is not None and lo > hi:
            raise _bad(field, _join(where, lo_key), f"{lo_key} {lo} is above {hi_key} {hi}: no "
                       "value satisfies the schema")
    lo = _number(node, "minimum", field, where)
    hi = _number(node, "maximum", field, where)
    xlo = _number(node, "exclusiveMinimum", field, where)
    xhi = _number(node, "exclusiveMaximum", field, where)
    lows = [(v, k, False) for v, k in ((lo, "minimum"),) if v is not None]
    lows += [(v, "exclusiveMinimum", True) for v in (xlo,) if v is not None]
    highs = [(v, k, False) for v, k in ((hi, "maximum"),) if v is not None]
    highs += [(v, "exclusiveMaximum", True) for v in (xhi,) if v is not None]
    for lv, lk, lx in lows:
        for hv, hk, hx in highs:
            if lv > hv or (lv == hv and (lx or hx)):
                raise _bad(field, _join(where, lk), f"{lk} {lv} and {hk} {hv} leave no number: "
                           "no value satisfies the schema")
    enum = node.get("enum")
    if enum is not None:
        if not isinstance(enum, list) or not enum:
            raise _bad(field, _join(where, "enum"), "enum must be a non-empty list: an empty one "
                       "admits no value")
        if len(enum) > MAX_ENUM:
            raise _bad(field, _join(where, "enum"), f"enum of {len(enum)} values is over "
                       f"{MAX_ENUM}")
    for key in ("properties", "patternProperties"):
        props = node.get(key)
        if isinstance(props, dict) and len(props) > MAX_PROPERTIES:
            raise _bad(field, _join(where, key), f"{len(props)} {key} are over {MAX_PROPERTIES}")
    prefix = node.get("prefixItems")
    if isinstance(prefix, list) and len(prefix) > MAX_PROPERTIES:
        raise _bad(field, _join(where, "prefixItems"), f"{len(prefix)} prefixItems are over "
                   f"{MAX_PROPERTIES}")
    ref = node.get("$ref")
    if ref is not None and (not isinstance(ref, str) or not ref.startswith("#")):
        raise _bad(field, _join(where, "$ref"), "only local references ('#/...') are resolved")
    pattern = node.get("pattern")
    if pattern is not None:
        if not isinstance(pattern, str):
            raise _bad(field, _join(where, "pattern"), "pattern must be a string")
        problem = _repetition_problem(pattern, regex=True)
        if problem:
            raise _bad(field, _join(where, "pattern"), problem)


def check_schema(schema: Any, field: str) -> None:
    """Walk `schema` (iteratively: depth is bounded by MAX_DEPTH, not by Python's stack)."""
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        raise ConstraintError(f"'{field}' must be a JSON schema object", param=field,
                              code="invalid_schema")
    stack: list[tuple[Any, str, int]] = [(schema, "", 1)]
    nodes = 0
    while stack:
        node, where, depth = stack.pop()
        if not isinstance(node, dict):
            continue
        nodes += 1
        if nodes > MAX_NODES:
            raise _bad(field, "", f"the schema has over {MAX_NODES} sub-schemas")
        if depth > MAX_DEPTH:
            raise _bad(field, where, f"the schema nests deeper than {MAX_DEPTH} levels")
        _check_node(node, field, where)
        for key in _SUBSCHEMA:
            if isinstance(node.get(key), dict):
                stack.append((node[key], _join(where, key), depth + 1))
        for key in _MAPS:
            sub = node.get(key)
            if isinstance(sub, dict):
                stack.extend((v, _join(where, f"{key}.{k}"), depth + 1) for k, v in sub.items())
        for key in (*_BRANCHES, "prefixItems"):
            sub = node.get(key)
            if isinstance(sub, list):
                if len(sub) > MAX_ENUM:
                    raise _bad(field, _join(where, key), f"{len(sub)} branches are over "
                               f"{MAX_ENUM}")
                stack.extend((v, _join(where, f"{key}[{i}]"), depth + 1)
                             for i, v in enumerate(sub))
        if isinstance(node.get("items"), list):  # draft-7 tuple form
            stack.extend((v, _join(where, f"items[{i}]"), depth + 1)
                         for i, v in enumerate(node["items"]))


_REPEAT = re.compile(r"\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}")


def _repetition_problem(text: str, *, regex: bool) -> str | None:
    """The first `{m,n}` with m > n or m over MAX_REPEAT, outside quoted strings, character
    classes, escapes and (GBNF) comments."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i += 1
            while i < n and text[i] != "]":
                i += 2 if text[i] == "\\" else 1
        elif c == '"' and not regex:
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "#" and not regex:
            while i < n and text[i] != "\n":
                i += 1
        elif c == "{":
            m = _REPEAT.match(text, i)
            if m:
                lo = int(m.group(1))
                hi = int(m.group(3)) if m.group(3) else (None if m.group(2) else lo)
                if lo > MAX_REPEAT:
                    return (f"repetition {m.group(0)} requires over {MAX_REPEAT} repetitions, "
                            "more than the engine's grammar allows")
                if hi is not None and lo > hi:
                    return (f"repetition {m.group(0)} has its minimum above its maximum: "
                            "nothing matches it (and the engine would loop building it)")
                i = m.end()
                continue
        i += 1
    return None


def check_grammar(grammar: str, field: str) -> None:
    if len(grammar.encode()) > MAX_GRAMMAR_BYTES:
        raise ConstraintError(f"'{field}' is over {MAX_GRAMMAR_BYTES} bytes", param=field,
                              code="invalid_grammar")
    problem = _repetition_problem(grammar, regex=False)
    if problem is None:
        rules = len(re.findall(r"^\s*[A-Za-z0-9_-]+\s*::=", _strip_literals(grammar), re.M))
        if rules > MAX_GRAMMAR_RULES:
            problem = f"{rules} rules are over {MAX_GRAMMAR_RULES}"
    if problem:
        raise ConstraintError(f"'{field}': {problem}", param=field, code="invalid_grammar")


def _strip_literals(grammar: str) -> str:
    return re.sub(r'"(\\.|[^"\\])*"|\[(\\.|[^\]\\])*\]|#[^\n]*', '""', grammar)


def check_constraint(constraint: dict, field: str = "") -> None:
    """A decoding constraint, {"json_schema": …} or {"labels": […]} (backends/base.py's GRAMMAR),
    before anything builds a grammar from it; `field` prefixes the place named."""
    def at(key: str) -> str:
        return f"{field}.{key}" if field else key

    keys = [k for k in ("json_schema", "labels") if constraint.get(k) is not None]
    if len(keys) != 1:
        raise ConstraintError(f"'{field or 'constraint'}': expected exactly one of json_schema "
                              f"or labels, got {', '.join(sorted(constraint)) or 'none'}",
                              param=field or "constraint", code="invalid_value")
    if keys == ["json_schema"]:
        check_schema(constraint["json_schema"], at("json_schema"))
        return
    labels = constraint["labels"]
    if not isinstance(labels, list) or not labels \
            or not all(isinstance(x, str) and x for x in labels):
        raise ConstraintError(f"'{at('labels')}': expected a non-empty list of non-empty strings",
                              param=at("labels"), code="invalid_value")
    if len(labels) > MAX_ENUM:
        raise ConstraintError(f"'{at('labels')}': {len(labels)} labels are over {MAX_ENUM}",
                              param=at("labels"), code="invalid_value")
