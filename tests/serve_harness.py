"""`edgepick serve` started as a user would (a child process on 127.0.0.1, a free port), waited
for by its /health, and always stopped; helpers to read its /metrics and its engine's /slots."""

from __future__ import annotations

import re
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import httpx
import psutil
import pytest

from parts import need_tool



def need_llama_server() -> None:
    need_tool("llama-server")


class Served:
    def __init__(self, proc: subprocess.Popen, url: str, log: Path) -> None:
        self.proc = proc
        self.url = url  # http://127.0.0.1:PORT
        self.log = log

    @property
    def v1(self) -> str:
        return self.url + "/v1"

    def metrics(self, key: str | None = None) -> str:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.get(self.url + "/metrics", headers=headers, timeout=10).text

    def metric(self, name: str, key: str | None = None, /, **labels: str) -> float:
        """Sum of a metric's samples whose labels match."""
        total = 0.0
        for line in self.metrics(key).splitlines():
            m = re.match(r"^([a-zA-Z_:]+)(\{[^}]*\})? ([0-9.eE+-]+|NaN)$", line)
            if not m or m.group(1) != name:
                continue
            got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            if all(got.get(k) == v for k, v in labels.items()):
                total += float(m.group(3))
        return total

    def engine_ports(self) -> list[int]:
        ports = []
        for child in psutil.Process(self.proc.pid).children(recursive=True):
            try:
                cmd = child.cmdline()
            except psutil.Error:
                continue
            if "--port" in cmd:
                ports.append(int(cmd[cmd.index("--port") + 1]))
        return ports

    def engine_slots(self) -> list[dict]:
        (port,) = self.engine_ports()
        return httpx.get(f"http://127.0.0.1:{port}/slots", timeout=10).json()


def wait_until(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll a condition on state (never a sleep standing in for an assertion), bounded."""
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


@contextmanager
def serve(args: list[str], tmp: Path, env: dict | None = None,
          ready: bool = True) -> Iterator[Served]:
    from edgepick.serve.spawn import spawn_serve

    need_llama_server()
    log = tmp / f"serve-{len(list(tmp.glob('serve-*.log')))}.log"
    with spawn_serve(["--log-dir", str(tmp), *args], log, env, ready, 120) as (url, proc):
        yield Served(proc, url, log)
