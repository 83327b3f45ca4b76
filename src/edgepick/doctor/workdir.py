"""Where doctor keeps the files it builds (a fixed GGUF, a whole-file quantization for a
bisection): beside the results store, never over a user's file."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from edgepick.models.gguf_rewrite import rewrite_gguf
from edgepick.store.identity import file_sha256


def work_dir() -> Path:
    root = Path(os.environ.get("EDGEPICK_HOME", Path.home() / ".edgepick")) / "doctor"
    root.mkdir(parents=True, exist_ok=True)
    return root


def rewritten(src: str | Path, kv_overrides: dict[str, tuple], kind: str) -> str:
    """A copy of `src` with `kv_overrides` written in (a fix doctor verifies), named by the
    source's content and the overrides so the run after the fix finds the same file."""
    src = Path(src)
    what = repr(sorted((k, v[0]) for k, v in kv_overrides.items()))
    tag = hashlib.sha256((file_sha256(str(src)) + what).encode()).hexdigest()[:10]
    dst = work_dir() / f"{src.stem}.{tag}.{kind}.gguf"
    if not dst.exists():
        rewrite_gguf(src, dst, kv_overrides=kv_overrides)
    return str(dst)
