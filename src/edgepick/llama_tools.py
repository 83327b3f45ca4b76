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


def repack_unsafe() -> bool:
    """Whether llama.cpp must run without its repacked weight buffers here: ggml's AMX matmul
    faults on hosts that advertise AMX but do not give the process the tile state (seen in
    ggml_backend_amx_mul_mat on any Q4_0/Q8_0/K-quant prompt of 2+ tokens). `make setup` builds
    the engine and the tools without AMX (scripts/llama_cflags.sh; the tools record their
    flags in bin/.cflags), so repacking stays on; only a build with AMX on an AMX host needs
    --no-repack. EDGEPICK_REPACK=1 keeps the repacking whatever the build."""
    if os.environ.get("EDGEPICK_REPACK") == "1":
        return False
    try:
        if "-mno-amx-int8" in (tools_dir() / ".cflags").read_text():
            return False
    except OSError:
        pass
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            return any(line.startswith("flags") and " amx_tile" in line for line in fh)
    except OSError:
        return False
