"""Eval sets that ship with the package, addressable by name wherever an eval set is named
(`--data`, a plan's `eval.data`): `demo` (every text task, en/zh) and `demo-tools` (tool calls,
seed 004 §4; docs/agent.md)."""

from __future__ import annotations

from importlib.resources import files

BUNDLED_SETS = {"demo": "demo_eval.jsonl", "demo-tools": "demo_tools.jsonl"}


def bundled_set_path(name: str) -> str | None:
    """The file of a bundled set, or None when `name` is not one."""
    if name not in BUNDLED_SETS:
        return None
    return str(files("edgepick").joinpath("data", BUNDLED_SETS[name]))
