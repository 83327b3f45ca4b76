"""llama.cpp's own command-line tools, built by `make tools` from the pinned llama-cpp-python
source (scripts/build_llama_tools.sh), so that they run the same code as the engine."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from edgepick.errors import EdgepickError


def tools_dir() -> Path:
    import llama_cpp

    root = Path(os.environ.get("EDGEPICK_CACHE", Path.home() / ".cache" / "edgepick"))
    return root / f"llama.cpp-{llama_cpp.__version__}" / "bin"


def tool_path(name: str) -> str:
    """Path of `llama-quantize`, `llama-bench`, … ; EDGEPICK_LLAMA_BIN overrides the folder."""
    folder = Path(os.environ["EDGEPICK_LLAMA_BIN"]) if os.environ.get("EDGEPICK_LLAMA_BIN") \
        else tools_dir()
    path = folder / name
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    found = shutil.which(name)
    if found:
        return found
    raise EdgepickError(f"llama.cpp tool '{name}' not found in {folder}; build it with `make tools`")
