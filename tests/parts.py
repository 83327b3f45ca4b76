"""Optional parts a test needs (llama-server, Ray, ONNX Runtime GenAI).

On a bare developer install a missing part skips the test and says which part. Under `CI=true`
it fails instead: CI installs every part, so a skip there would hide a broken install.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def missing(what: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"required part missing under CI=true: {what}", pytrace=False)
    pytest.skip(f"optional part missing: {what}")


def need_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing(f"{name} ({exc})")
        raise  # unreachable: missing() raises


def need_tool(name: str) -> str:
    """The path of one of llama.cpp's tools built by scripts/build_llama_tools.sh."""
    from edgepick.errors import EdgepickError
    from edgepick.llama_tools import tool_path

    try:
        return str(tool_path(name))
    except EdgepickError as exc:
        missing(str(exc))
        raise
