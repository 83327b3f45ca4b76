"""`python -m edgepick ARGS` as a user runs it: one helper for every test folder (a module of its
own, since `from conftest import` finds whichever conftest pytest imported last)."""

from __future__ import annotations

import os
import subprocess
import sys


def run_cli(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `python -m edgepick ARGS` as a user would, capturing output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "edgepick", *args], capture_output=True,
                          text=True, env=full_env, timeout=timeout)
