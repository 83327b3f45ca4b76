"""What schemathesis needs to know of serve's schema beyond JSON Schema: the prompt caps.

serve's prompt caps are in tokens (`--max-prompt-tokens`, `--echo-max-prompt-tokens`), which no
JSON Schema keyword can count, so `/openapi.json` states them as keywords of its own
(`x-edgepick-max-prompt-tokens`, `x-edgepick-echo-max-prompt-tokens`, on the request models).
A request over one is answered as OpenAI answers it: 400 `context_length_exceeded`, quoting the
count and the cap. schemathesis' positive-data check (ST202) knows statuses only, so a
generated prompt over a cap would read as "valid data refused". This hook drops exactly that
failure, and only when the answer proves it: a 400 with that code, whose quoted count is over
a quoted cap equal to the one the schema declares. Any other 400 to valid data still fails.

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
    body = case.operation.definition.raw.get("requestBody", {})
    ref = body.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref", "")
    model = case.operation.schema.raw_schema.get("components", {}).get("schemas", {}) \
        .get(ref.rpartition("/")[2], {})
    return {k: v for k, v in model.items() if k in CAPS and isinstance(v, int)}


def refused_over_declared_cap(failure, case, response) -> bool:
    """Is this ST202 the documented refusal of a prompt over a cap the schema declares?"""
    if getattr(failure, "code", None) != "ST202" or response.status_code != 400:
        return False
    try:
        err = json.loads(response.content)["error"]
    except (ValueError, KeyError, TypeError):
        return False
    if not isinstance(err, dict) or err.get("code") != "context_length_exceeded":
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


@schemathesis.hook
def filter_failure(context, failure, case, response) -> bool:
    dropped = refused_over_declared_cap(failure, case, response)
    log = os.environ.get("EDGEPICK_FUZZ_DROPPED")  # a file listing what was dropped, if set
    if dropped and log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{case.operation.label} {case.id}: {json.loads(response.content)}\n")
    return not dropped
