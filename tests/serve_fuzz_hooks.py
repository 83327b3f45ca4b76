"""What schemathesis needs to know of serve's schema beyond JSON Schema: the prompt caps and the
end of a conversation.

serve's prompt caps are in tokens (`--max-prompt-tokens`, `--echo-max-prompt-tokens`), which no
JSON Schema keyword can count, so `/openapi.json` states them as keywords of its own
(`x-edgepick-max-prompt-tokens`, `x-edgepick-echo-max-prompt-tokens`, on the request models).
A request over one is answered as OpenAI answers it: 400 `context_length_exceeded`, quoting the
count and the cap. schemathesis' positive-data check (ST202) knows statuses only, so a
generated prompt over a cap would read as "valid data refused". This hook drops exactly that
failure, and only when the answer proves it: a 400 with that code, whose quoted count is over
a quoted cap equal to the one the schema declares. Any other 400 to valid data still fails.
The same for the end of a conversation (`x-edgepick-last-message` on the chat request: not an
assistant message with tool calls, nor a second assistant one, which the engine cannot
continue): dropped only when the request ends so and the 400 names that last message. And for an
embedding input the model's tokenizer turns into no token (`x-edgepick-min-input-tokens`): dropped
only when the 400 `empty_input` names a text input the request holds.

Used by tests/serve/test_serve_contract.py, and by a CLI run with
`SCHEMATHESIS_HOOKS=serve_fuzz_hooks` (PYTHONPATH=tests); docs/serve.md.
"""

from __future__ import annotations

import json
import os
import re

import schemathesis

CAPS = {
    "x-edgepick-max-prompt-tokens":
        re.compile(r"prompt of (\d+) tokens is over this server's limit of (\d+) prompt tokens"),
    "x-edgepick-echo-max-prompt-tokens":
        re.compile(r"prompt of (\d+) tokens plus (\d+) more is over the (\d+) tokens echo"),
}


def declared_caps(case) -> dict[str, int]:
    """The caps the schema declares on this operation's request body."""
    return {k: v for k, v in _model(case).items() if k in CAPS and isinstance(v, int)}


def _refusal(failure, response) -> dict | None:
    """The OpenAI-shaped error of a 400 that schemathesis read as valid data refused (ST202),
    else None."""
    if getattr(failure, "code", None) != "ST202" or response.status_code != 400:
        return None
    try:
        err = json.loads(response.content)["error"]
    except (ValueError, KeyError, TypeError):
        return None
    return err if isinstance(err, dict) else None


def refused_over_declared_cap(failure, case, response) -> bool:
    """Is this ST202 the documented refusal of a prompt over a cap the schema declares?"""
    err = _refusal(failure, response)
    if err is None or err.get("code") != "context_length_exceeded":
        return False
    for keyword, cap in declared_caps(case).items():
        m = CAPS[keyword].search(str(err.get("message", "")))
        if m is None:
            continue
        figures = [int(g) for g in m.groups()]
        asked = sum(figures[:-1])  # the prompt (plus the continuation echo scores)
        if figures[-1] == cap and asked > cap:
            return True
    return False


LAST_MESSAGE = "x-edgepick-last-message"


def refused_by_declared_last_message(failure, case, response) -> bool:
    """Is this ST202 the documented refusal of a conversation whose end the schema's own
    keyword `x-edgepick-last-message` excludes (JSON Schema cannot name a list's last item)?
    Only when the request does end so: an assistant message with tool calls, or two assistant
    messages."""
    err = _refusal(failure, response)
    body = getattr(case, "body", None)
    messages = body.get("messages") if isinstance(body, dict) else None
    if err is None or not isinstance(messages, list) or not messages \
            or LAST_MESSAGE not in _model(case):
        return False
    last = messages[-1]
    if err.get("param") != f"messages[{len(messages) - 1}]" \
            or not isinstance(last, dict) or last.get("role") != "assistant":
        return False
    before = messages[-2] if len(messages) > 1 else None
    return bool(last.get("tool_calls")) or (isinstance(before, dict)
                                             and before.get("role") == "assistant")


MIN_INPUT_TOKENS = "x-edgepick-min-input-tokens"


def refused_empty_input(failure, case, response) -> bool:
    """Is this ST202 the documented refusal of an embedding input that the model's tokenizer
    turns into no token (`x-edgepick-min-input-tokens` on the request: JSON Schema cannot count
    tokens)? Only when the 400 names a text input the request does hold."""
    err = _refusal(failure, response)
    if err is None or err.get("code") != "empty_input" or _model(case).get(MIN_INPUT_TOKENS) != 1:
        return False
    body = getattr(case, "body", None)
    inputs = body.get("input") if isinstance(body, dict) else None
    m = re.fullmatch(r"input(?:\[(\d+)\])?", str(err.get("param")))
    if m is None:
        return False
    if m.group(1) is None:
        return isinstance(inputs, str)
    i = int(m.group(1))
    return isinstance(inputs, list) and i < len(inputs) and isinstance(inputs[i], str)


def _model(case) -> dict:
    body = case.operation.definition.raw.get("requestBody", {})
    ref = body.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref", "")
    return case.operation.schema.raw_schema.get("components", {}).get("schemas", {}) \
        .get(ref.rpartition("/")[2], {})


@schemathesis.hook
def filter_failure(context, failure, case, response) -> bool:
    dropped = refused_over_declared_cap(failure, case, response) or \
        refused_by_declared_last_message(failure, case, response) or \
        refused_empty_input(failure, case, response)
    log = os.environ.get("EDGEPICK_FUZZ_DROPPED")  # a file listing what was dropped, if set
    if dropped and log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{case.operation.label} {case.id}: {json.loads(response.content)}\n")
    return not dropped
