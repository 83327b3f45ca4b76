"""One supervised llama.cpp `llama-server` child: its command line, start, health, memory, stop.

llama-server gives continuous batching over `-np` slots, and a restart really returns its memory
to the system (seed 000 §5.3: "never assume the framework has no leaks"). edgepick stays the
control plane in front of it and talks to it over loopback HTTP.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from edgepick.errors import EdgepickError
from edgepick.records.candidate import RuntimeSettings

log = logging.getLogger("edgepick.serve")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class EngineSpec:
    """What one engine runs: a verified GGUF under a served name and version, with settings."""

    path: str
    name: str  # the model id clients see in /v1/models
    version: str = "1"
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    slots: int = 2

    def command(self, exe: str, port: int) -> list[str]:
        rt = self.runtime
        cmd = [exe, "-m", self.path, "--host", "127.0.0.1", "--port", str(port),
               "--alias", self.name, "-np", str(self.slots),
               # -c is shared by the slots; each slot gets the deploy's context
               "-c", str(rt.n_ctx * self.slots), "-t", str(rt.threads),
               "-b", str(rt.n_batch), "-ub", str(rt.n_ubatch),
               "-ctk", rt.kv_type, "-ctv", rt.kv_type, "-fa", "on" if rt.flash_attn else "off",
               "-s", str(rt.seed), "--no-webui",
               # no host-RAM prompt cache: a slot's KV state is all a request leaves behind
               "--cache-ram", "0"]
        if rt.swa_full:
            cmd.append("--swa-full")
        if not rt.mmap:
            cmd.append("--no-mmap")
        return cmd


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when edgepick dies, so no engine is ever orphaned."""
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def tree_memory_bytes(pid: int) -> int:
    """RssAnon + VmSwap of a process and its descendants: what it holds that the kernel cannot
    simply drop (file-backed mmap pages of the weights are left out)."""
    total = 0
    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except psutil.Error:
        return 0
    for p in procs:
        try:
            with open(f"/proc/{p.pid}/status") as fh:
                for line in fh:
                    if line.startswith(("RssAnon:", "VmSwap:")):
                        total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


class Engine:
    """A running llama-server for one `EngineSpec`; `client` talks to it."""

    def __init__(self, spec: EngineSpec, log_dir: str | Path | None = None) -> None:
        self.spec = spec
        self.port = 0
        self.proc: asyncio.subprocess.Process | None = None
        self.client: httpx.AsyncClient | None = None
        self.inflight = 0
        self.stopping = False
        self._idle = asyncio.Event()
        self._idle.set()
        self.log_path = Path(log_dir or tempfile.gettempdir()) / f"llama-server-{os.getpid()}-{id(self)}.log"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    async def start(self, timeout_s: float = 120.0) -> None:
        from edgepick.llama_tools import tool_path

        exe = tool_path("llama-server")
        self.port = free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        logfile = open(self.log_path, "ab")
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.spec.command(exe, self.port), stdout=logfile, stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL, preexec_fn=_die_with_parent,
                # its own session: a Ctrl-C or `timeout` aimed at serve's process group must not
                # reach the engine first and read as a crash; serve stops it on the way out
                start_new_session=True)
        finally:
            logfile.close()
        # the pool bounds concurrency itself, so the client never needs more than slots + a few
        # llama-server (cpp-httplib) closes idle keep-alive connections after 5 s; expiring ours
        # sooner keeps a request from being sent on a connection the server is closing
        limits = httpx.Limits(max_connections=self.spec.slots + 4,
                              max_keepalive_connections=self.spec.slots + 4, keepalive_expiry=2.0)
        self.client = httpx.AsyncClient(base_url=self.base, limits=limits,
                                        timeout=httpx.Timeout(None, connect=5.0))
        try:
            await asyncio.wait_for(self._wait_healthy(), timeout_s)
        except (asyncio.TimeoutError, EdgepickError) as exc:
            await self.stop()
            tail = self.log_tail()
            raise EdgepickError(f"llama-server for {self.spec.name}@{self.spec.version} did not "
                                f"become ready ({exc or 'timed out'}); last log lines: {tail}") from None
        log.info("engine %s@%s ready on port %d (pid %d)", self.spec.name, self.spec.version,
                 self.port, self.pid)

    async def _wait_healthy(self) -> None:
        assert self.client is not None and self.proc is not None
        while True:
            if self.proc.returncode is not None:
                raise EdgepickError(f"exited with code {self.proc.returncode}")
            try:
                if (await self.client.get("/health", timeout=2.0)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.05)

    def log_tail(self, n: int = 3) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(lines[-n:]) or "(empty log)"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def memory_bytes(self) -> int:
        return tree_memory_bytes(self.proc.pid) if self.alive else 0

    # -- in-flight accounting, so a drain knows when the last request on this engine ended --
    def begin(self) -> None:
        self.inflight += 1
        self._idle.clear()

    def end(self) -> None:
        self.inflight -= 1
        if self.inflight <= 0:
            self.inflight = 0
            self._idle.set()

    async def drain(self, timeout_s: float) -> bool:
        """Wait for in-flight requests to finish; False when some were still running."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_s)
            return True
        except asyncio.TimeoutError:
            return False

    async def stop(self) -> None:
        self.stopping = True
        if self.client is not None:
            await self.client.aclose()
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except asyncio.TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        try:
            self.log_path.unlink()
        except OSError:
            pass
