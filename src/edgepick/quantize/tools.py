"""Running llama.cpp's own `llama-quantize` and `llama-imatrix`, and reading what they report.

The quantized bytes must come from llama.cpp's code: llama-cpp-python's ctypes binding cannot
pass an importance matrix or per-tensor overrides (both are C++ containers), so the command-line
tools built from the same pinned source are driven instead, and their logs are parsed for the
facts they only print (which tensors fell back to another type).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from edgepick.errors import EdgepickError
from edgepick.launch.process import start
from edgepick.llama_tools import engine_package_version, tool_path
from edgepick.progress import ProgressEvent, Tick
from edgepick.records.quantize import Fallback, TensorOverride

# llama-quant.cpp, tensor_type_fallback():
#   warning: NAME - ncols N not divisible by B (required for type T) [(WARNING: ...)] -> falling back to U
_FALLBACK_RE = re.compile(
    r"warning:\s+(?P<tensor>\S+)\s+-\s+ncols\s+(?P<ncols>\d+)\s+not divisible by\s+(?P<block>\d+)"
    r"\s+\(required for type\s+(?P<wanted>\S+)\)\s*(?:\(WARNING:[^)]*\)\s*)?"
    r"->\s*falling back to\s+(?P<got>\S+)")
# "[  12/ 272]   blk.0.attn_q.weight - [...]": one line per tensor as it is written
_PROGRESS_RE = re.compile(r"^\[\s*(\d+)/\s*(\d+)\]")
_ERROR_HINTS = ("error", "failed", "invalid", "cannot", "unable", "disabled", "not supported")


def quantizer_version() -> str:
    """Identity of the quantizer code: the pinned llama-cpp-python version it was built from."""
    return f"llama.cpp from llama-cpp-python {engine_package_version()}"


def parse_fallbacks(log: str) -> list[Fallback]:
    seen: dict[str, Fallback] = {}
    for m in _FALLBACK_RE.finditer(log):
        seen[m["tensor"]] = Fallback(tensor=m["tensor"], ncols=int(m["ncols"]),
                                     block=int(m["block"]), wanted=m["wanted"].upper(),
                                     got=m["got"].upper())
    return list(seen.values())


def run_tool(argv: list[str], log_path: Path | None = None,
             on_progress: Tick | None = None) -> str:
    """Run a llama.cpp tool; return its merged stdout+stderr, or raise a one-line error."""
    lines: list[str] = []
    proc = start(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                 errors="replace", bufsize=1)
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if on_progress:
            m = _PROGRESS_RE.match(line)
            if m:
                on_progress(ProgressEvent(int(m.group(1)), int(m.group(2))))
    rc = proc.wait()
    log = "".join(lines)
    if log_path is not None:
        log_path.write_text(log)
    if rc != 0:
        raise EdgepickError(f"{Path(argv[0]).name} failed (exit {rc}): {_error_line(log)}"
                            + (f"; full log in {log_path}" if log_path else ""))
    return log


def _error_line(log: str) -> str:
    candidates = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in reversed(candidates):
        low = ln.lower()
        if any(h in low for h in _ERROR_HINTS) and not low.startswith("warning: blk"):
            return ln[:300]
    return candidates[-1][:300] if candidates else "no output"


def quantize_argv(src: str, dst: str, ftype: str, *, imatrix: str | None = None,
                  overrides: list[TensorOverride] | None = None, pure: bool = False,
                  allow_requantize: bool = False, threads: int = 2) -> list[str]:
    argv = [tool_path("llama-quantize")]
    if allow_requantize:
        argv.append("--allow-requantize")
    if pure:
        argv.append("--pure")
    if imatrix:
        argv += ["--imatrix", imatrix]
    for o in overrides or []:
        argv += ["--tensor-type", o.arg()]
    argv += [src, dst, ftype, str(threads)]
    return argv


def imatrix_argv(src: str, text: str, out: str, *, ctx: int, chunks: int | None,
                 threads: int) -> list[str]:
    argv = [tool_path("llama-imatrix"), "-m", src, "-f", text, "-o", out, "-c", str(ctx),
            "-t", str(threads), "-b", str(ctx), "--no-ppl"]
    if chunks:
        argv += ["--chunks", str(chunks)]
    return argv
