"""Importance matrix from the user's calibration text, computed by llama.cpp's `llama-imatrix`.

The file is llama-imatrix's own GGUF format, which `llama-quantize --imatrix` (and so
`edgepick quantize --imatrix`) reads. llama-imatrix collects activations for the tensors inside
the blocks (`blk.*`); the output / tied token-embedding matrix gets none, so it is quantized
without importance weights (llama.cpp's behaviour).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import BaseModel

from edgepick.errors import EdgepickError
from edgepick.models.gguf_info import read_gguf
from edgepick.quantize.tools import imatrix_argv, run_tool

_NEED_TOKENS_RE = re.compile(r"you need at least (\d+) tokens", re.I)
_CHUNKS_RE = re.compile(r"computing over (\d+) chunks", re.I)


class ImatrixResult(BaseModel):
    path: str
    source: str
    text: str
    ctx: int
    chunks: int | None  # chunks llama-imatrix processed (from its log), if it said
    size_bytes: int


def default_output(src: str) -> str:
    stem = Path(src).name
    stem = stem[: -len(".gguf")] if stem.lower().endswith(".gguf") else stem
    return str(Path(src).with_name(f"{stem}.imatrix.gguf"))


def compute_imatrix(src: str, text: str, out: str | None = None, *, ctx: int = 512,
                    chunks: int | None = None, threads: int = 2) -> ImatrixResult:
    read_gguf(src)  # a clear one-line error for a file that is not a GGUF
    if not os.path.isfile(text):
        raise EdgepickError(f"{text}: calibration text not found")
    if os.path.getsize(text) == 0:
        raise EdgepickError(f"{text}: calibration text is empty")
    if ctx < 8:
        raise EdgepickError(f"--ctx {ctx}: too small; use at least 8 (512 is usual)")
    out = out or default_output(src)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    part = out + ".part"
    log_path = Path(out + ".log")
    argv = imatrix_argv(src, text, part, ctx=ctx, chunks=chunks, threads=threads)
    try:
        log = run_tool(argv, log_path=log_path)
    except EdgepickError as exc:
        need = _NEED_TOKENS_RE.search(log_path.read_text() if log_path.exists() else "")
        if need:
            raise EdgepickError(f"{text}: too short for --ctx {ctx}: llama-imatrix needs at "
                                f"least {need.group(1)} tokens; give more text or a smaller "
                                f"--ctx") from None
        raise exc
    if not os.path.isfile(part):
        raise EdgepickError(f"llama-imatrix wrote no output; see {log_path}")
    os.replace(part, out)
    m = _CHUNKS_RE.search(log)
    return ImatrixResult(path=out, source=src, text=text, ctx=ctx,
                         chunks=int(m.group(1)) if m else None, size_bytes=os.path.getsize(out))
