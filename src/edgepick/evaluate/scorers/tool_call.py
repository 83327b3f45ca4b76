"""Tool calls (seed 004 §4.1): the right tool with the right arguments, or no call.

An item offers `tools` (OpenAI function schemas) and expects either one call
`{"name", "arguments"}` or the string "none". The reply is read by `edgepick.toolcall.calls`
(strict JSON, text around it allowed). Per item:
- the action is the tool named, or "none" for a plain-text reply;
- a call is schema-valid when it parses, names an offered tool and its arguments validate
  against that tool's `parameters`; anything else that tries to call is a format error
  (unacceptable: an unparseable call, a tool that does not exist, arguments breaking the schema);
- arguments are compared field by field with their type: numbers as numbers (5 == 5.0, but
  "5" is wrong), booleans as booleans, strings after NFKC, case folding and whitespace
  collapsing, lists as multisets, objects field by field.

Aggregates (docs/agent.md): `tool_choice_accuracy` (action right, over all items),
`argument_accuracy` (reference fields matched, over the items whose tool was chosen right),
`schema_valid_rate` (over the replies that try to call), `no_call_precision` (of the replies
that call nothing, the share whose reference is "none"), `no_call_recall`, and what the agent's
guard would do with the replies that try to call: `guard_repaired_rate` (valid only after a
logged repair) and `guard_refused_rate` (sent back to the model as an error).
"""

from __future__ import annotations

import functools
import json
import numbers
from typing import Any, ClassVar

import jsonschema

from edgepick.toolcall.calls import parse_call, schema_errors, tool_schemas
from edgepick.toolcall.guard import Guard
from edgepick.evaluate.scorers import ItemScore
from edgepick.evaluate.text import nfkc

NONE = "none"


def _norm_str(s: str) -> str:
    return " ".join(nfkc(s).casefold().split())


def same_value(ref: Any, got: Any) -> bool:
    """Type-aware equality of one argument (see the module docstring)."""
    if isinstance(ref, bool) or isinstance(got, bool):
        return isinstance(ref, bool) and isinstance(got, bool) and ref == got
    if isinstance(ref, numbers.Number):
        return isinstance(got, numbers.Number) and abs(float(ref) - float(got)) <= \
            1e-9 * max(1.0, abs(float(ref)))
    if isinstance(ref, str):
        return isinstance(got, str) and _norm_str(ref) == _norm_str(got)
    if isinstance(ref, list):
        if not isinstance(got, list) or len(got) != len(ref):
            return False
        left = list(got)
        for r in ref:
            hit = next((i for i, g in enumerate(left) if same_value(r, g)), None)
            if hit is None:
                return False
            left.pop(hit)
        return True
    if isinstance(ref, dict):
        return isinstance(got, dict) and set(ref) == set(got) and \
            all(same_value(v, got[k]) for k, v in ref.items())
    return ref == got


def argument_matches(ref_args: dict, got_args: Any) -> tuple[int, int, list[str]]:
    """(fields matched, fields in the reference, names of the fields that differ)."""
    got = got_args if isinstance(got_args, dict) else {}
    wrong = [k for k, v in ref_args.items() if k not in got or not same_value(v, got[k])]
    return len(ref_args) - len(wrong), len(ref_args), wrong


class ToolCallScorer:
    name = "tool_call"
    pass_rule: ClassVar[str] = ("the reply calls the expected tool with every reference argument "
                                "equal in value and type, or calls nothing when none is expected")

    def score(self, item, output: str) -> ItemScore:
        schemas = tool_schemas(getattr(item, "tools", None))
        ref = item.reference
        want = NONE if ref == NONE else ref["name"]
        p = parse_call(output)
        action = NONE if p.kind == "none" else (p.name or "?")
        d: dict = {"expected": want, "action": action, "attempted": p.kind != "none",
                   "call": p.as_dict(), "tool_ok": action == want}
        why, format_ok, schema_valid = "", True, None
        if p.kind == "unparseable":
            format_ok, schema_valid, why = False, False, f"unparseable call: {p.problem}"
        elif p.kind == "call":
            if p.name not in schemas:
                format_ok, schema_valid = False, False
                why = f"hallucinated tool '{p.name}' (offered: {', '.join(schemas) or 'none'})"
            else:
                errs = schema_errors(schemas[p.name], p.arguments)
                schema_valid = not errs
                if errs:
                    format_ok = False
                    why = f"arguments break the schema of '{p.name}': {errs[0]}"
        d["schema_valid"] = schema_valid
        if p.kind != "none":  # what the agent's guard would do with this reply (seed 004 §6.4)
            v = Guard(schemas).check(output)
            d["guard"] = "refused" if v.refused else "repaired" if v.repairs else "clean"
        score = 1.0 if action == want else 0.0
        if want != NONE and action == want:
            matched, total, wrong = argument_matches(ref.get("arguments") or {}, p.arguments)
            d.update(args_matched=matched, args_total=total, args_wrong=wrong)
            score = 0.5 + 0.5 * (matched / total if total else 1.0)
            if wrong and not why:
                why = f"wrong argument(s): {', '.join(wrong)}"
        elif not why:
            why = (f"called '{action}' when no call was needed" if want == NONE
                   else "no call where one was needed" if action == NONE
                   else f"called '{action}' instead of '{want}'")
        correct = score == 1.0 and format_ok
        return ItemScore(score=score, correct=correct, format_ok=format_ok,
                         why="" if correct else why, details=d,
                         strict_format=(p.kind == "call" and not p.wrapped) if p.kind != "none"
                         else None,
                         format_error=None if format_ok else "invalid_json")

    def aggregate(self, items: list, scores: list[ItemScore]) -> dict[str, float]:
        """Each rate with its denominator under `<name>_n`, so intervals can be recomputed;
        a rate whose denominator is 0 is absent (undefined), never 0."""
        ds = [s.details for s in scores if "action" in s.details]
        tried = [d for d in ds if d["attempted"]]
        rates = {
            "tool_choice_accuracy": (sum(d["tool_ok"] for d in ds), len(ds)),
            "argument_accuracy": (sum(d.get("args_matched", 0) for d in ds),
                                  sum(d.get("args_total", 0) for d in ds)),
            "schema_valid_rate": (sum(bool(d["schema_valid"]) for d in tried), len(tried)),
            "no_call_precision": (sum(d["expected"] == NONE for d in ds if d["action"] == NONE),
                                  sum(d["action"] == NONE for d in ds)),
            "no_call_recall": (sum(d["action"] == NONE for d in ds if d["expected"] == NONE),
                               sum(d["expected"] == NONE for d in ds)),
            "guard_repaired_rate": (sum(d.get("guard") == "repaired" for d in tried), len(tried)),
            "guard_refused_rate": (sum(d.get("guard") == "refused" for d in tried), len(tried)),
        }
        out: dict[str, float] = {}
        for name, (k, n) in rates.items():
            if n:
                out[name], out[f"{name}_n"] = k / n, float(n)
        return out


@functools.lru_cache(maxsize=256)
def _schema_problem(text: str) -> str | None:
    """Why a tool's `parameters` (as sorted JSON) is not a valid JSON Schema, or None. Checked
    once per distinct schema: a tool set repeats a few tools over every item, and each check
    walks the whole metaschema (about 10 ms)."""
    schema = json.loads(text)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc.message
    return None


def check_tool_item(tools: Any, ref: Any) -> list[tuple[str, str]]:
    """An eval item's `tools` and `reference` for task tool_call: (field, problem) pairs."""
    if not isinstance(tools, list) or not tools:
        return [("tools", "required for task 'tool_call': a list of OpenAI function schemas "
                          '({"type": "function", "function": {"name", "description", '
                          '"parameters"}})')]
    problems: list[tuple[str, str]] = []
    for i, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            problems.append((f"tools.{i}", 'expected {"type": "function", "function": '
                                          '{"name": ..., "parameters": {...}}}'))
            continue
        bad = _schema_problem(json.dumps(fn.get("parameters") or {}, sort_keys=True))
        if bad:
            problems.append((f"tools.{i}", f"parameters of '{fn['name']}' are not a valid JSON "
                                           f"Schema: {bad}"))
    if problems:
        return problems
    schemas = tool_schemas(tools)
    if ref == NONE:
        return []
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str) \
            or not isinstance(ref.get("arguments", {}), dict):
        return [("reference", 'must be "none" or {"name": ..., "arguments": {...}} for '
                              "task 'tool_call'")]
    if ref["name"] not in schemas:
        return [("reference", f"names the tool '{ref['name']}', which the item does not offer")]
    errs = schema_errors(schemas[ref["name"]], ref.get("arguments", {}))
    return [("reference", f"arguments break the tool's own schema: {errs[0]}")] if errs else []
