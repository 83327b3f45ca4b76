"""llama.cpp's own command-line tools, built by `make tools` from the pinned llama-cpp-python
source (scripts/build_llama_tools.sh), so that they run the same code as the engine."""

from __future__ import annotations

import importlib.util
import os
import shutil
from importlib.metadata import version
from pathlib import Path

from edgepick.errors import EdgepickError


def engine_package_version() -> str:
    """The pinned llama-cpp-python's version (its installed metadata, the same string as
    `llama_cpp.__version__`), read without loading the engine's library."""
    return version("llama_cpp_python")


def tools_dir() -> Path:
    root = Path(os.environ.get("EDGEPICK_CACHE", Path.home() / ".cache" / "edgepick"))
    return root / f"llama.cpp-{engine_package_version()}" / "bin"


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


ENGINE_FLAGS_FILE = "edgepick-build-flags"  # beside the llama_cpp package, written by make setup
NO_AMX = "-mno-amx-int8"


def engine_build_flags() -> str | None:
    """The compiler flags the in-process engine (llama-cpp-python) was built with, as `make
    setup` recorded them beside the installed package; None when not recorded. Found without
    importing llama_cpp (that would load the library)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.origin:
        return None
    try:
        return (Path(spec.origin).parent / ENGINE_FLAGS_FILE).read_text().strip()
    except OSError:
        return None


def tools_build_flags() -> str | None:
    """The flags the llama.cpp tools that run (llama-server, llama-bench: EDGEPICK_LLAMA_BIN's
    folder, else the cache's) were built with: their bin/.cflags; None when not recorded."""
    try:
        folder = Path(tool_path("llama-server")).parent
    except EdgepickError:
        folder = tools_dir()
    try:
        return (folder / ".cflags").read_text().strip()
    except OSError:
        return None


def _cpu_has_amx() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            return any(line.startswith("flags") and " amx_tile" in line for line in fh)
    except OSError:
        return False


def repack_reason(engine: str = "in_process") -> str | None:
    """Why llama.cpp must run without its repacked weight buffers here, or None (repacking on).
    ggml's AMX matmul faults on hosts that advertise AMX but do not give the process the tile
    state (seen in ggml_backend_amx_mul_mat on any Q4_0/Q8_0/K-quant prompt of 2+ tokens).
    `make setup` builds the engine and the tools without AMX (scripts/llama_cflags.sh) and
    records the flags with each: beside the llama_cpp package for the in-process engine
    (`engine`="in_process"), in the tools' bin/.cflags for llama-server and llama-bench
    (`engine`="tools"). The decision is read from the build that runs, never from $HOME alone;
    flags not recorded on an AMX CPU turn repacking off, and this says so.
    EDGEPICK_REPACK=1 keeps the repacking whatever the build."""
    if os.environ.get("EDGEPICK_REPACK") == "1":
        return None
    flags = engine_build_flags() if engine == "in_process" else tools_build_flags()
    if flags is not None and NO_AMX in flags:
        return None
    if not _cpu_has_amx():
        return None
    what = "the in-process engine (llama-cpp-python)" if engine == "in_process" else \
        "the llama.cpp tools"
    if flags is None:
        return (f"repacking off: this CPU has AMX and the build flags of {what} are not recorded "
                "(make setup writes them), so it may use AMX kernels that fault here; "
                "EDGEPICK_REPACK=1 keeps it on")
    return (f"repacking off: {what} was built with AMX ({flags or 'no flags'}) on a CPU that has "
            "it; EDGEPICK_REPACK=1 keeps it on")


def repack_unsafe(engine: str = "in_process") -> bool:
    """Whether llama.cpp must run without its repacked weight buffers (repack_reason)."""
    return repack_reason(engine) is not None
