"""llama.cpp's own llama-server, started on a free loopback port for a test and always stopped."""

from __future__ import annotations

import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from parts import need_tool

from edgepick.launch import stop
from edgepick.serve.engine import free_port


@contextmanager
def llama_server(model: str, alias: str, log_dir: Path, parallel: int = 1) -> Iterator[str]:
    """Yields the endpoint as edgepick writes it: `http://127.0.0.1:PORT/v1#alias`."""
    exe = need_tool("llama-server")
    port = free_port()
    log = open(log_dir / "llama-server.log", "w")
    proc = subprocess.Popen([exe, "-m", model, "--host", "127.0.0.1", "--port", str(port),
                             "-c", "1024", "-np", str(parallel), "-t", "1", "--alias", alias],
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"llama-server exited with {proc.returncode}"
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "llama-server did not become ready"
            time.sleep(0.2)
        yield f"{base}/v1#{alias}"
    finally:
        stop(proc, timeout=20)
        log.close()
