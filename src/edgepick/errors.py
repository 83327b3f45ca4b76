"""Errors a user can act on: the CLI prints them as one line, without a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable


class EdgepickError(Exception):
    """A problem with the user's input or environment, stated in one line."""


class InputError(EdgepickError):
    """Bad input in a named file, optionally at a line and field."""

    def __init__(self, path: str | Path, problem: str, *, line: int | None = None,
                 field: str | None = None):
        self.path = str(path)
        self.problem = problem
        self.line = line
        self.field = field
        where = self.path + (f":{line}" if line is not None else "")
        what = f"field '{field}': {problem}" if field else problem
        super().__init__(f"{where}: {what}")


def known_name(value: str, known: Iterable[str], what: str) -> str:
    """`value` when it is one of `known`; else the ValueError a pydantic validator raises, worded
    alike for every closed list of names: "unknown <what> '<value>'; known: a, b"."""
    if value not in known:
        raise ValueError(f"unknown {what} '{value}'; known: {', '.join(known)}")
    return value


def pydantic_problem(err: dict) -> tuple[str | None, str]:
    """One pydantic error → (its dotted field or None, the problem in words), worded alike for
    every file a user writes: "unknown field", "missing", no "Value error, " prefix."""
    field = ".".join(str(p) for p in err.get("loc", ())) or None
    kind = err.get("type")
    problem = "unknown field" if kind == "extra_forbidden" else "missing" if kind == "missing" \
        else str(err.get("msg", "")).removeprefix("Value error, ")
    return field, problem


def first_problem(exc: Exception) -> tuple[str | None, str]:
    """The first problem of a pydantic ValidationError (or any error: its text, no field)."""
    errors = exc.errors() if callable(getattr(exc, "errors", None)) else []
    return pydantic_problem(errors[0]) if errors else (None, str(exc))


def input_error(path: str | Path, exc: Exception, *, field_prefix: str | None = None,
                problem_prefix: str = "", line: int | None = None) -> InputError:
    """The one-line InputError for a file whose content failed validation: its first problem,
    the field under `field_prefix` when the model validated one section of the file."""
    field, problem = first_problem(exc)
    if field_prefix:
        field = f"{field_prefix}.{field}" if field else field_prefix
    return InputError(path, problem_prefix + problem, line=line, field=field)
