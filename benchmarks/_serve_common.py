"""Shared by the serve benchmarks: `edgepick serve` started as a user would, its engine's own
port (to talk to llama-server directly beside it), and a streaming client that times tokens."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import psutil


@contextmanager
def edgepick_serve(args: list[str]) -> Iterator[tuple[str, subprocess.Popen]]:
    """Yields (http://127.0.0.1:PORT, process) once /health is 200; always stops it."""
    # the tests' launcher (tests/serve_spawn.py): dev-only code stays out of the package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from serve_spawn import spawn_serve

    log = Path(tempfile.mkdtemp(prefix="edgepick-bench-serve-")) / "serve.log"
    with spawn_serve(args, log) as served:
        yield served


def engine_pid_port(proc: subprocess.Popen) -> tuple[int, int]:
    for child in psutil.Process(proc.pid).children(recursive=True):
        cmd = child.cmdline()
        if "--port" in cmd:
            return child.pid, int(cmd[cmd.index("--port") + 1])
    raise SystemExit("no llama-server child found")


def engine_key(pid: int) -> str:
    """The locked engine's key for this start (serve/engine/llama_server.py puts it in the child's
    environment): a benchmark that talks to the engine directly, as its own user, reads it."""
    with open(f"/proc/{pid}/environ", "rb") as fh:
        for item in fh.read().split(b"\0"):
            if item.startswith(b"LLAMA_API_KEY="):
                return item.split(b"=", 1)[1].decode()
    raise SystemExit("the llama-server child has no LLAMA_API_KEY")


def metric(url: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in httpx.get(url + "/metrics", timeout=10).text.splitlines():
        m = re.match(r"^([a-zA-Z_:]+)(\{[^}]*\})? ([0-9.eE+-]+)$", line)
        if m and m.group(1) == name:
            got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            if all(got.get(k) == v for k, v in labels.items()):
                total += float(m.group(3))
    return total


def stream_timing(client: httpx.Client, base: str, body: dict) -> tuple[float, float, int]:
    """(TTFT s, decode tok/s after the first token, tokens) of one streamed chat completion,
    timed at the client; tokens are the text-carrying events (one per token in llama-server)."""
    try:
        return _stream_timing(client, base, body)
    except httpx.RemoteProtocolError:
        # llama-server may close a kept-alive connection after a stream: once more, fresh
        return _stream_timing(client, base, body)


def _stream_timing(client: httpx.Client, base: str, body: dict) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    first = last = None
    n = 0
    with client.stream("POST", base + "/v1/chat/completions", json=dict(body, stream=True)) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data:") or line.endswith("[DONE]"):
                continue
            event = json.loads(line[5:])
            choices = event.get("choices") or []
            if choices and (choices[0].get("delta") or {}).get("content"):
                now = time.perf_counter()
                first = first or now
                last = now
                n += 1
    if first is None or last is None or n < 2:
        raise SystemExit("no tokens streamed")
    return first - t0, (n - 1) / (last - first), n


def threads() -> str:
    # one engine thread: the ratios measured do not need two, and on a shared 2-core host two
    # spinning engine threads slow down far more than one when other work runs
    return os.environ.get("EDGEPICK_BENCH_THREADS", "1")
