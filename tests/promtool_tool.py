"""The real `promtool` (Debian's prometheus package; .ci/run installs it) for the monitor tests:
`check rules` and `test rules` on files the tests write."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from parts import missing


def need_promtool() -> str:
    exe = shutil.which("promtool")
    if exe is None:
        missing("promtool (apt-get install prometheus)")
    return exe  # type: ignore[return-value]


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([need_promtool(), *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)


def write_test(path: Path, tests: list[dict], rule_files: list[str] | None = None,
               interval: str = "15s") -> Path:
    path.write_text(yaml.safe_dump({"rule_files": rule_files or [],
                                    "evaluation_interval": interval, "tests": tests},
                                   sort_keys=False, width=100000))
    return path


def series_values(values: list[float]) -> str:
    return " ".join(f"{v:g}" for v in values)
