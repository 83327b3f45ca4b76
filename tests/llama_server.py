"""llama.cpp's own llama-server, started on a free loopback port for a test and always stopped."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from parts import need_tool

from edgepick.backends.llama_server_client import wait_healthy
from edgepick.launch import free_port, start, stop


@contextmanager
def llama_server(model: str, alias: str, log_dir: Path, parallel: int = 1,
                 extra: list[str] | tuple[str, ...] = ()) -> Iterator[str]:
    """Yields the endpoint as edgepick writes it: `http://127.0.0.1:PORT/v1#alias`."""
    exe = need_tool("llama-server")
    port = free_port()
    log = open(log_dir / "llama-server.log", "w")
    proc = start([exe, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "1024",
                  "-np", str(parallel), "-t", "1", "--alias", alias, *extra],
                 stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(f"{base}/health", lambda: proc.poll() is None, 120, "llama-server")
        yield f"{base}/v1#{alias}"
    finally:
        stop(proc, timeout=20)
        log.close()
