"""Reading a user's YAML file: a syntax error names the file and the line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from edgepick.errors import InputError


def parse_yaml(text: str, path: str | Path) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(path, f"malformed YAML ({getattr(exc, 'problem', exc)})",
                         line=mark.line + 1 if mark else None) from None


def read_yaml(path: str | Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return parse_yaml(fh.read(), path)
