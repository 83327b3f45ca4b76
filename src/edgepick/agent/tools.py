"""Tools an agent may call, read from a tools.yaml (format in docs/agent.md; seed 004 §4).

Each tool has a name, a description, JSON-schema `parameters`, `destructive` (run only after
confirmation) and what runs it: `builtin: NAME` (see builtins.py; its description and parameters
are the defaults) or `run: "package.module:function"`, a Python callable given the validated
arguments as keyword arguments. Nothing is ever run through a shell.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from edgepick.agent.builtins import BUILTINS, ToolFailure
from edgepick.errors import EdgepickError, InputError, input_error, known_name
from edgepick.yaml_input import read_yaml

MAX_RESULT_CHARS = 2000  # what goes back into a small model's window


class ToolSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
    description: str = ""
    parameters: dict | None = None
    destructive: bool | None = None
    builtin: str | None = None
    run: str | None = Field(default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")

    @model_validator(mode="after")
    def _one_runner(self) -> "ToolSpec":
        if (self.builtin is None) == (self.run is None):
            raise ValueError("give exactly one of 'builtin' or 'run' (module:function)")
        if self.builtin is not None:
            known_name(self.builtin, BUILTINS, "builtin")
        if self.run is not None and self.parameters is None:
            raise ValueError("a 'run' tool needs its JSON-schema 'parameters'")
        if self.parameters is not None:
            try:
                jsonschema.validators.validator_for(self.parameters).check_schema(self.parameters)
            except jsonschema.SchemaError as exc:
                raise ValueError(f"parameters are not a valid JSON Schema: {exc.message}") from None
        return self

    def resolved(self) -> "ToolSpec":
        """Defaults filled from the builtin."""
        if self.builtin is None:
            return self.model_copy(update={"destructive": bool(self.destructive)})
        b = BUILTINS[self.builtin]
        return self.model_copy(update={
            "description": self.description or b.description,
            "parameters": self.parameters or b.parameters,
            "destructive": b.destructive if self.destructive is None else self.destructive})

    def openai_schema(self) -> dict:
        return {"type": "function", "function": {"name": self.name,
                                                 "description": self.description,
                                                 "parameters": self.parameters}}


@dataclass
class ToolResult:
    ok: bool
    output: str


class ToolSet:
    """The tools of one agent, with the sandbox folder the built-in file tools may touch."""

    def __init__(self, specs: list[ToolSpec], sandbox: str | Path | None = None) -> None:
        self.specs = {s.name: s.resolved() for s in specs}
        self.sandbox = Path(sandbox).resolve() if sandbox is not None else None
        if any(s.builtin for s in specs) and self.sandbox is None:
            raise EdgepickError("built-in tools need a sandbox folder (tools.yaml 'sandbox:' "
                                "or --sandbox)")
        self._callables: dict[str, Callable[..., Any]] = {}

    @classmethod
    def builtin(cls, sandbox: str | Path, names: list[str] | None = None) -> "ToolSet":
        return cls([ToolSpec(name=n, builtin=n) for n in (names or list(BUILTINS))], sandbox)

    def names(self) -> list[str]:
        return list(self.specs)

    def schemas(self) -> list[dict]:
        return [s.openai_schema() for s in self.specs.values()]

    def execute(self, name: str, arguments: dict) -> ToolResult:
        """Run a validated call; a tool's own failure comes back as a result for the model."""
        spec = self.specs[name]
        try:
            if spec.builtin is not None:
                self.sandbox.mkdir(parents=True, exist_ok=True)
                out = BUILTINS[spec.builtin].fn(self.sandbox, **arguments)
            else:
                out = self._callable(spec)(**arguments)
        except ToolFailure as exc:
            return ToolResult(False, f"error: {exc}")
        except Exception as exc:  # noqa: BLE001 - a user's tool failing must not end the agent
            return ToolResult(False, f"error: {type(exc).__name__}: {exc}")
        text = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, default=str)
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + " [… cut]"
        return ToolResult(True, text)

    def _callable(self, spec: ToolSpec) -> Callable[..., Any]:
        if spec.name not in self._callables:
            mod, _, fn = spec.run.partition(":")
            try:
                self._callables[spec.name] = getattr(importlib.import_module(mod), fn)
            except (ImportError, AttributeError) as exc:
                raise EdgepickError(f"tool '{spec.name}': cannot load {spec.run} ({exc})") from None
        return self._callables[spec.name]


def load_tools(path: str | Path, sandbox: str | Path | None = None) -> ToolSet:
    """A tools.yaml, every problem reported as one line naming the file and the field."""
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("tools"), list) or not data["tools"]:
        raise InputError(path, "expected a mapping with a non-empty 'tools' list (and optionally "
                               "'sandbox')")
    unknown = set(data) - {"tools", "sandbox"}
    if unknown:
        raise InputError(path, f"unknown key(s) {sorted(unknown)}; expected 'tools', 'sandbox'")
    specs, seen = [], set()
    for i, raw in enumerate(data["tools"]):
        try:
            spec = ToolSpec.model_validate(raw)
        except ValidationError as exc:
            raise input_error(path, exc, field_prefix=f"tools[{i}]") from None
        if spec.name in seen:
            raise InputError(path, f"duplicate tool name '{spec.name}'", field=f"tools[{i}].name")
        seen.add(spec.name)
        specs.append(spec)
    if sandbox is None and data.get("sandbox") is not None:
        sandbox = Path(path).resolve().parent / str(data["sandbox"])
    try:
        return ToolSet(specs, sandbox)
    except EdgepickError as exc:
        raise InputError(path, str(exc)) from None
