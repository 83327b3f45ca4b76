"""The prompts doctor measures with: the user's (`--prompts`: an eval JSONL, or plain text one
prompt a line), or a few built-in probes when none are given."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from edgepick.errors import InputError

# Short, answerable in a few tokens, in both languages the seeds serve.
PROBES = (
    "Name three colours of the rainbow.",
    "What is the capital of France? Answer in one sentence.",
    "Write one short sentence about the sea.",
    "用一句话介绍一下太阳。",
)


@dataclass
class Prompt:
    id: str
    messages: list[dict]
    tools: list[dict] | None = None
    reply: str | None = None  # a reply already recorded (a failing tool call, say)


def builtin() -> list[Prompt]:
    return [Prompt(f"probe-{i + 1}", [{"role": "user", "content": p}])
            for i, p in enumerate(PROBES)]


def load(path: str | Path) -> list[Prompt]:
    """One Prompt per non-empty line; a line starting with `{` is a JSON item with `messages`
    (or `prompt`), optional `tools` and an optional recorded `reply`; any other line is the
    user's text. A bad line is one message naming the file and line."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(p), f"cannot read the prompts ({exc})") from None
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if not line.lstrip().startswith("{"):
            out.append(Prompt(f"line-{n}", [{"role": "user", "content": line}]))
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise InputError(str(p), f"not JSON ({exc.msg})", line=n) from None
        msgs = item.get("messages")
        if msgs is None and "prompt" in item:
            msgs = [{"role": "user", "content": str(item["prompt"])}]
        if not isinstance(msgs, list) or not all(isinstance(m, dict) and "content" in m
                                                 for m in msgs):
            raise InputError(str(p), "expected `messages` (a list of {role, content}) or "
                                     "`prompt`", line=n)
        reply = item.get("reply", item.get("output"))
        if isinstance(reply, (dict, list)):
            reply = json.dumps(reply, ensure_ascii=False)
        out.append(Prompt(str(item.get("id", f"line-{n}")), msgs, item.get("tools"), reply))
    if not out:
        raise InputError(str(p), "no prompts (the file is empty)")
    return out
