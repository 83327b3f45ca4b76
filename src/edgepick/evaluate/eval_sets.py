"""Eval sets by name and in groups: the bundled sets (`demo`: every text task, en/zh;
`demo-tools`: tool calls, seed 004 §4; docs/agent.md) addressable wherever an eval set is named
(`--data`, a plan's `eval.data`), and one evaluation over several sets, each with its own item
limit (seed 000 §3.1): the items are concatenated, so every candidate and the reference see the
same items and one EvalResult holds every task type."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib.resources import files

from pydantic import BaseModel, ConfigDict, Field

from edgepick.errors import EdgepickError, InputError
from edgepick.evaluate.items import load_eval_set
from edgepick.store.identity import file_sha256


BUNDLED_SETS = {"demo": "demo_eval.jsonl", "demo-tools": "demo_tools.jsonl"}


def bundled_set_path(name: str) -> str | None:
    """The file of a bundled set, or None when `name` is not one."""
    if name not in BUNDLED_SETS:
        return None
    return str(files("edgepick").joinpath("data", BUNDLED_SETS[name]))


def spread(items: list, limit: int | None) -> list:
    """The first `limit` items taken round-robin over tasks, so every task stays represented."""
    if limit is None or limit >= len(items):
        return items
    by_task: dict[str, list] = {}
    for it in items:
        by_task.setdefault(it.task, []).append(it)
    out, queues = [], list(by_task.values())
    while len(out) < limit:
        for q in queues:
            if q and len(out) < limit:
                out.append(q.pop(0))
    return out


class DataSpec(BaseModel):
    """One eval set and how many of its items to use (round-robin over its tasks)."""

    model_config = ConfigDict(extra="forbid")

    set: str = Field(min_length=1)  # a bundled set ("demo", "demo-tools") or a JSONL file
    limit: int | None = Field(None, ge=1)  # None: the request's limit, else every item


def specs_of(data, default_limit: int | None) -> list[DataSpec]:
    """`data` as a list of specs: a name or a path, a DataSpec, or a list mixing both."""
    raw = data if isinstance(data, list) else [data]
    out = [DataSpec(set=d) if isinstance(d, str) else DataSpec.model_validate(d) for d in raw]
    return [s if s.limit is not None else s.model_copy(update={"limit": default_limit})
            for s in out]


def set_path(name: str, resolve=lambda p: p) -> str:
    return bundled_set_path(name) or resolve(name)


@dataclass
class LoadedSets:
    items: list  # EvalItem, set after set
    problems: list[InputError]
    label: str  # the files, joined with " + " (EvalResult.data)
    sha: str  # the files and which of their items were used


def load_sets(specs: list[DataSpec], resolve=lambda p: p) -> LoadedSets:
    """Every set loaded and cut to its limit. Two sets giving one item id would make their
    outputs and badcases indistinguishable: refused, naming both files."""
    items, problems, parts, paths = [], [], [], []
    owner: dict[str, str] = {}
    for s in specs:
        path = set_path(s.set, resolve)
        got, bad = load_eval_set(path)
        if not got:
            raise EdgepickError(f"{path}: no valid items to evaluate")
        got = spread(got, s.limit)
        for it in got:
            if it.id in owner:
                raise InputError(path, f"item id '{it.id}' is also in {owner[it.id]}; "
                                 "ids must be unique across the eval sets of one evaluation")
            owner[it.id] = path
        items += got
        problems += bad
        paths.append(path)
        parts.append([file_sha256(path), [it.id for it in got]])
    # One set keeps the single-file identity, so results stored before lists existed still match.
    blob = parts[0] if len(parts) == 1 else parts
    sha = hashlib.sha256(json.dumps(blob).encode()).hexdigest()[:32]
    return LoadedSets(items, problems, " + ".join(paths), sha)
