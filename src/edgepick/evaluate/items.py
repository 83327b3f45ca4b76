"""Eval sets: JSONL, one item a line (docs/evaluate.md), validated line by line.

A bad line never stops the run: every problem is collected with its file, line and field, and
the good items are returned alongside so they still get evaluated.
"""

from __future__ import annotations

import hashlib
import json
import numbers
from pathlib import Path
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from edgepick.errors import InputError, known_name, pydantic_problem
from edgepick.evaluate.scorers import scored_tasks
from edgepick.evaluate.scorers.labels import yes_no_label
from edgepick.evaluate.scorers.tool_call import check_tool_item
from edgepick.toolcall.prompting import FORMAT_VERSION

# The built-in task types; an eval set may also use any task a plugin scorer registers
# (evaluate/scorers scored_tasks), so this tuple is edgepick's own, not a closed list.
TASKS = ("classification", "yes_no", "extraction", "qa", "summary", "generation", "code",
         "math", "multi_turn", "tool_call")
DIFFICULTIES = ("easy", "medium", "hard")


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "user", "assistant"]
    content: str


class EvalItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    task: str
    messages: list[Message] | None = None
    prompt: str | None = None
    reference: Any
    labels: list[str] | None = None
    schema_: dict | None = Field(default=None, alias="schema")
    tools: list[dict] | None = None  # task tool_call: OpenAI function schemas (seed 004 §4.1)
    difficulty: Literal["easy", "medium", "hard"] | None = None
    tags: list[str] = Field(default_factory=list)
    critical: bool = False
    max_tokens: int | None = Field(default=None, ge=1, le=8192)
    meta: dict = Field(default_factory=dict)  # free-form; ignored by the scorers

    @field_validator("task")
    @classmethod
    def _known_task(cls, v: str) -> str:
        if v in TASKS:
            return v

        return known_name(v, tuple(dict.fromkeys([*TASKS, *scored_tasks()])), "task")

    @property
    def reference_free(self) -> bool:
        """No reference (sampled traffic without a cloud): only the reference-free figures
        (evaluate/reference_free.py). A property, so stored items and keys stay as they were."""
        return self.reference is None

    def constraint(self) -> dict | None:
        """What a grammar would hold this item's answer to (seed 000 §2.3): its JSON schema, its
        label set, or yes/no; None for free text."""
        if self.schema_ is not None:
            return {"json_schema": self.schema_}
        if self.labels:
            return {"labels": list(self.labels)}
        if self.task == "yes_no":
            return {"labels": ["yes", "no", "Yes", "No"]}
        return None

    def chat_messages(self) -> list[dict]:
        if self.messages is not None:
            return [m.model_dump() for m in self.messages]
        return [{"role": "user", "content": self.prompt or ""}]

    def input_hash(self) -> str:
        """Identity of what the model sees; the reference is left out so fixing an answer
        re-scores without re-running inference."""
        seen: dict = {"messages": self.chat_messages()}
        if self.tools is not None:  # how tools are shown is part of the input
            seen.update(tools=self.tools, tool_format=FORMAT_VERSION)
        blob = json.dumps(seen, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _check_item(item: EvalItem) -> list[tuple[str, str]]:
    """Cross-field rules pydantic's per-field types do not express: (field, problem) pairs."""
    problems: list[tuple[str, str]] = []
    if (item.messages is None) == (item.prompt is None):
        problems.append(("messages", "give exactly one of 'messages' or 'prompt'"))
    elif item.messages is not None and (not item.messages or item.messages[-1].role != "user"):
        problems.append(("messages", "must end with a 'user' message"))
    ref, task = item.reference, item.task
    if ref is None and task != "extraction":
        pass  # reference-free: loads for the figures that need no reference
    elif task == "extraction":
        if ref is not None and not isinstance(ref, dict):
            problems.append(("reference", "must be a JSON object for task 'extraction'"))
        if item.schema_ is not None:
            try:
                jsonschema.validators.validator_for(item.schema_).check_schema(item.schema_)
            except jsonschema.SchemaError as exc:
                problems.append(("schema", f"not a valid JSON Schema: {exc.message}"))
            else:
                if isinstance(ref, dict) and not _schema_ok(item.schema_, ref):
                    problems.append(("reference", "does not satisfy the item's own schema"))
    elif task == "tool_call":
        problems.extend(check_tool_item(item.tools, ref))
    elif task == "math":
        if isinstance(ref, bool) or not (isinstance(ref, numbers.Number) or _is_number(ref)):
            problems.append(("reference", "must be a number (or a numeric string) for task 'math'"))
    elif task == "qa":
        if not (isinstance(ref, str) and ref.strip()) and not (
                isinstance(ref, list) and ref and all(isinstance(r, str) and r.strip() for r in ref)):
            problems.append(("reference", "must be a non-empty string or list of strings for 'qa'"))
    elif not (isinstance(ref, str) and ref.strip()):
        problems.append(("reference", f"must be a non-empty string for task '{task}'"))
    if task == "classification":
        if not item.labels:
            problems.append(("labels", "required for task 'classification'"))
        elif isinstance(ref, str) and ref not in item.labels:
            problems.append(("reference", f"'{ref}' is not one of the labels {item.labels}"))
    if task == "yes_no" and isinstance(ref, str):
        if yes_no_label(ref) is None:
            problems.append(("reference", "must say yes or no (yes/no/是/否) for task 'yes_no'"))
    return problems


def _schema_ok(schema: dict, value: Any) -> bool:
    return jsonschema.validators.validator_for(schema)(schema).is_valid(value)


def _is_number(v: Any) -> bool:
    try:
        float(str(v).replace(",", ""))
        return True
    except ValueError:
        return False


def load_eval_set(path: str | Path) -> tuple[list[EvalItem], list[InputError]]:
    """All valid items, and one InputError per problem found (file, line, field)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "eval set not found")
    items: list[EvalItem] = []
    problems: list[InputError] = []
    seen: dict[str, int] = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line.strip())
            except json.JSONDecodeError as exc:
                problems.append(InputError(path, f"broken JSON: {exc.msg} at column {exc.colno}",
                                           line=lineno))
                continue
            if not isinstance(raw, dict):
                problems.append(InputError(path, "expected a JSON object", line=lineno))
                continue
            try:
                item = EvalItem.model_validate(raw)
            except ValidationError as exc:
                for err in exc.errors():
                    field, msg = pydantic_problem(err)
                    if err["type"] == "extra_forbidden":
                        msg = "unexpected field (put free-form data under 'meta')"
                    problems.append(InputError(path, msg, line=lineno, field=field))
                continue
            line_problems = _check_item(item)
            if item.id in seen:
                line_problems.append(("id", f"duplicate id '{item.id}' (first on line {seen[item.id]})"))
            if line_problems:
                problems.extend(InputError(path, p, line=lineno, field=f) for f, p in line_problems)
                continue
            seen[item.id] = lineno
            items.append(item)
    return items, problems


def task_constraints(items: list[EvalItem]) -> dict[str, dict]:
    """Task -> the one constraint all its items share (what deploy.yaml may hold that task's
    answers to); a task whose items carry different constraints, or some none, has none."""
    seen: dict[str, list] = {}
    for it in items:
        seen.setdefault(it.task, []).append(it.constraint())
    return {task: cs[0] for task, cs in seen.items()
            if cs[0] is not None and all(c == cs[0] for c in cs)}

