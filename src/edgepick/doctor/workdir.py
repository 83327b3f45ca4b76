"""Where doctor keeps the files it builds (a fixed GGUF, a whole-file quantization for a
bisection): beside the results store, never over a user's file."""

from __future__ import annotations

import os
from pathlib import Path


def work_dir() -> Path:
    root = Path(os.environ.get("EDGEPICK_HOME", Path.home() / ".edgepick")) / "doctor"
    root.mkdir(parents=True, exist_ok=True)
    return root
