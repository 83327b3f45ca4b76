"""Reading a user's YAML file: a syntax error names the file and the line."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from edgepick.errors import InputError, input_error

M = TypeVar("M", bound=BaseModel)


def parse_yaml(text: str, path: str | Path) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(path, f"malformed YAML ({getattr(exc, 'problem', exc)})",
                         line=mark.line + 1 if mark else None) from None


def read_yaml(path: str | Path) -> Any:
    """A user's YAML file, or one line naming the file: missing, unreadable, not UTF-8, malformed."""
    return parse_yaml(read_user_text(path), path)


def read_user_text(path: str | Path) -> str:
    """A user's text file as UTF-8, or one line naming the file and what is wrong with it."""
    try:
        raw = Path(path).read_bytes()
    except IsADirectoryError:
        raise InputError(path, "is a directory, expected a YAML file") from None
    except OSError as exc:
        raise InputError(path, f"cannot read the file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputError(path, f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                         f"{exc.start}); save the file as UTF-8", line=line) from None
    return text


def read_yaml_mapping(path: str | Path, expected: str, *, empty_ok: bool = True) -> dict:
    """A user's YAML file that must hold a mapping; `expected` is the one line said otherwise.
    An empty file is an empty mapping unless `empty_ok` is False."""
    data = read_yaml(path)
    if data is None and empty_ok:
        return {}
    if not isinstance(data, dict):
        raise InputError(path, expected)
    return data


def validate_input(model: type[M], data: Any, path: str | Path) -> M:
    """`data` from a user's file as `model`; the first problem is one line naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise input_error(path, exc) from None
