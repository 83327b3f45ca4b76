"""Errors a user can act on: the CLI prints them as one line, without a traceback."""

from __future__ import annotations

from pathlib import Path


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
