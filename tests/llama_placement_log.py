"""What llama.cpp allocates on each backend device for one placement, read from a real
llama-server run with llama.cpp's rpc-server standing in for a second device: the
`llama_memory_breakdown_print` table it logs at exit (whole MiB, truncated) and the per-buffer
lines it logs while loading (two decimals), which the table sums."""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import time
import urllib.request
from collections import defaultdict

import pytest

from edgepick.launch.process import free_port
from edgepick.llama_tools import tool_path
from parts import need_tool

MIB = 2**20
ROW = re.compile(r"memory_breakdown_print: \|\s+- (.+?)\s+\|[^|]*?(\d+) = +(\d+) \+ +(\d+) \+ +(\d+)")
BUFFER = re.compile(r"(?:load_tensors|llama_kv_cache|sched_reserve):\s+(\S+)\s+"
                    r"(model|KV|compute) buffer size =\s+([\d.]+) MiB")
PART = {"model": "model", "KV": "context", "compute": "compute"}


def row_name(buffer: str) -> str:
    """The breakdown row a buffer is counted in: `RPC0[host:port]` in `RPC0`, the CPU's own and
    mapped buffers in `Host`; others (CPU_REPACK) in their own row."""
    if buffer in ("CPU", "CPU_Mapped"):
        return "Host"
    return buffer.split("[", 1)[0]


def _wait_port(port: int, proc: subprocess.Popen, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listening on {port} after {timeout} s")


@contextlib.contextmanager
def rpc_server(timeout: float = 20):
    """An rpc-server on 127.0.0.1 at a free port (one thread), stopped on leaving: yields its
    endpoint."""
    port = free_port()
    proc = subprocess.Popen([tool_path("ggml-rpc-server"), "-H", "127.0.0.1", "-p", str(port),
                             "-t", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_port(port, proc, timeout)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def server_allocations(model, endpoint: str, args: list[str], timeout: float = 120) -> dict:
    """Start llama-server on `model` with `--rpc endpoint` and `args`, wait until it serves, stop
    it, and return {"table": {row: {model, context, compute}} in MiB as the breakdown printed
    them, "buffers": the same from the per-buffer lines, "log": the log}."""
    port = free_port()
    cmd = [tool_path("llama-server"), "-m", str(model), "--rpc", endpoint, "--host", "127.0.0.1",
           "--port", str(port), "-t", "1", "-np", "1", "--fit", "off", "-lv", "4",
           "--no-warmup", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        end = time.monotonic() + timeout
        while time.monotonic() < end and proc.poll() is None:
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                    if r.status == 200:
                        break
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        log, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    table = {m[0].split(" (")[0]: {"model": int(m[2]), "context": int(m[3]), "compute": int(m[4])}
             for m in ROW.findall(log)}
    assert table, "\n".join(log.splitlines()[-15:])
    buffers: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for name, part, mib in BUFFER.findall(log):
        buffers[row_name(name)][PART[part]] += float(mib)
    return {"table": table, "buffers": {k: dict(v) for k, v in buffers.items()}, "log": log}


@pytest.fixture(scope="module")
def rpc_endpoint():
    """An rpc-server for the module's tests, with the tools the checks run beside it."""
    for tool in ("ggml-rpc-server", "llama-server", "llama-fit-params"):
        need_tool(tool)
    with rpc_server() as ep:
        yield ep
