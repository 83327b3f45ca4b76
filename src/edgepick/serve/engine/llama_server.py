"""One supervised llama.cpp `llama-server` child: its command line, start, health, memory, stop.

llama-server gives continuous batching over `-np` slots, and a restart really returns its memory
to the system (seed 000 §5.3: "never assume the framework has no leaks"). edgepick stays the
control plane in front of it and talks to it over loopback HTTP.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

import httpx
import psutil

from edgepick.backends import llama_server_client as lsc
from edgepick.errors import EdgepickError
from edgepick.launch.process import AsyncChild, free_port
from edgepick.llama_tools import repack_unsafe, tool_path
from edgepick.serve.engine.process import EngineSpec

log = logging.getLogger("edgepick.serve")


ABORT_POLL_S = 0.05  # how often a drain or a SIGTERM grace re-reads its abort condition
__all__ = ["Engine", "EngineSpec", "LlamaServer", "free_port", "llama_server_argv",
           "llama_server_command", "tree_memory_bytes"]


def llama_server_argv(spec: EngineSpec, port: int) -> list[str]:
    """The pinned llama-server's whole command line for `spec` on `port`: the one place that
    names the binary, for serve's pool and for bench's engine that runs a deploy's flags."""
    return llama_server_command(spec, tool_path("llama-server"), port)


def llama_server_command(spec: EngineSpec, exe: str, port: int) -> list[str]:
    """llama-server's command line for `spec` (the key goes in its environment)."""
    rt = spec.runtime
    # an embedding takes its whole input in one ubatch (llama-server lowers -b to -ub)
    batch = rt.n_ctx if spec.pooling else rt.n_batch
    ubatch = rt.n_ctx if spec.pooling else rt.n_ubatch
    cmd = [exe, "-m", spec.path, "--host", "127.0.0.1", "--port", str(port),
           "--alias", spec.name, "-np", str(spec.slots),
           # -c is shared by the slots; each slot gets the deploy's context
           "-c", str(rt.n_ctx * spec.slots), "-t", str(rt.threads),
           "-b", str(batch), "-ub", str(ubatch),
           "-ctk", rt.kv_type, "-ctv", rt.kv_type, "-fa", "on" if rt.flash_attn else "off",
           "-s", str(rt.seed), "--no-webui",
           # no host-RAM prompt cache: a slot's KV state is all a request leaves behind
           "--cache-ram", "0",
           # locked: /slots would show other requests' prompts, and POST /props (off by
           # default) would change settings; /metrics (aggregate slot use, behind the key)
           # lets edgepick compare its accounting with the engine's own
           "--no-slots", "--metrics"]
    if spec.pooling:
        # one KV cache for all slots: with a cache per slot, the pinned llama-server pools
        # the second input of a batch wrongly (cosine 0.72 to the same input alone, measured
        # by tests/serve/test_serve_embeddings.py against llama.cpp in process)
        cmd += ["--embeddings", "--pooling", spec.pooling, "--kv-unified"]
    if rt.adapter is not None:  # the LoRA the decision measured, at its scale (common/arg.cpp)
        cmd += ["--lora-scaled", f"{rt.adapter.path}:{rt.adapter.scale:g}"]
    if rt.speculative is not None:  # the kind the decision measured (records/speculative.py)
        cmd += rt.speculative.server_flags()
    if rt.placement is not None:  # where the decision measured each tensor (-ngl, --rpc, -ot...)
        cmd += rt.placement.llama_args()
    if rt.swa_full:
        cmd.append("--swa-full")
    if not rt.mmap:
        # the pinned llama-server has no --no-mmap (common/arg.cpp): --load-mode none reads the
        # weights as llama-cpp-python's use_mmap=False does (LLAMA_LOAD_MODE_NONE)
        cmd += ["--load-mode", "none"]
    if repack_unsafe("tools"):  # ggml's AMX kernels crash here (llama_tools.repack_unsafe)
        cmd.append("--no-repack")
    return cmd


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


class LlamaServer:
    """A running llama-server for one `EngineSpec`; `client` talks to it (serve's one
    implementation of serve/engine/process.py's `EngineProcess`).

    The child is locked: it gets a random key for this start only (in its environment, not on
    its command line, which every local user can read in /proc), and `client` sends it; a local
    process without it gets 401 on everything but /health. It inherits no descriptor of
    edgepick's (its listening socket included) and dies with edgepick."""

    def __init__(self, spec: EngineSpec, log_dir: str | Path | None = None) -> None:
        self.spec = spec
        self.port = 0
        self.proc: AsyncChild | None = None
        self.client: httpx.AsyncClient | None = None
        self.inflight = 0
        self.stopping = False
        self._key = secrets.token_urlsafe(32)
        self._idle = asyncio.Event()
        self._idle.set()
        self.log_path = Path(log_dir or tempfile.gettempdir()) / f"llama-server-{os.getpid()}-{id(self)}.log"
        self.keep_log = False  # a failed start keeps its log for the reader of the error
        self.n_vocab: int | None = None  # read from the engine once it is healthy
        self.n_embd: int | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def auth(self) -> dict[str, str]:
        """The headers that reach this engine (for edgepick's own clients only)."""
        return lsc.bearer(self._key)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    async def start(self, timeout_s: float = 120.0) -> None:
        self.port = free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, LLAMA_API_KEY=self._key)
        with open(self.log_path, "ab") as logfile:
            self.proc = AsyncChild.start(llama_server_argv(self.spec, self.port), stdout=logfile,
                                         stderr=subprocess.STDOUT, env=env, new_session=True)
        # the pool bounds concurrency itself, so the client never needs more than slots + a few
        # llama-server (cpp-httplib) closes idle keep-alive connections after 5 s; expiring ours
        # sooner keeps a request from being sent on a connection the server is closing
        limits = httpx.Limits(max_connections=self.spec.slots + 4,
                              max_keepalive_connections=self.spec.slots + 4, keepalive_expiry=2.0)
        self.client = httpx.AsyncClient(base_url=self.base, limits=limits, headers=self.auth,
                                        timeout=httpx.Timeout(None, connect=5.0))
        proc = self.proc
        try:
            await asyncio.wait_for(lsc.await_healthy(self.client, lambda: proc.returncode),
                                   timeout_s)
        except (asyncio.TimeoutError, EdgepickError) as exc:
            self.keep_log = True
            await self.stop()
            tail = self.log_tail()
            raise EdgepickError(f"llama-server for {self.spec.name}@{self.spec.version} did not "
                                f"become ready ({exc or 'timed out'}); last log lines: {tail} "
                                f"(log kept: {self.log_path})") from None
        await self._read_meta()
        log.info("engine %s@%s ready on port %d (pid %d)", self.spec.name, self.spec.version,
                 self.port, self.pid)

    async def _read_meta(self) -> None:
        """The model's vocabulary size and width (llama-server's /v1/models `meta`): token ids
        at or over the vocabulary are refused before they reach the engine, and /openapi.json
        states both (serve/http/openapi_doc.py)."""
        try:
            r = await self.client.get("/v1/models", timeout=10)
            lsc.check(r)
            meta = ((r.json().get("data") or [{}])[0].get("meta") or {})
        except (httpx.HTTPError, EdgepickError, ValueError, AttributeError):
            return
        self.n_vocab = meta.get("n_vocab") or None
        self.n_embd = meta.get("n_embd") or None

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

    async def probe(self, timeout_s: float) -> bool:
        """Does the engine answer a cheap request within `timeout_s`? (a stopped or wedged
        process does not)"""
        if not self.alive or self.client is None:
            return False
        return await lsc.probe(self.client, timeout_s)

    async def slot_use(self, timeout_s: float = 5.0) -> dict[str, int]:
        """The engine's own count of busy slots and of requests waiting inside it, from its
        /metrics (aggregate figures only: no request's content). Its main loop answers it."""
        assert self.client is not None
        r = await self.client.get("/metrics", timeout=timeout_s)
        lsc.check(r)
        out = {}
        for key, name in (("processing", "requests_processing"),
                          ("deferred", "requests_deferred"),
                          ("tokens_predicted", "tokens_predicted_total"),
                          ("decodes", "n_decode_total")):
            m = re.search(rf"^llamacpp:{name}\s+([0-9.eE+-]+)$", r.text, re.M)
            out[key] = int(float(m.group(1))) if m else -1
        return out

    async def loop_state(self, timeout_s: float) -> dict[str, int] | None:
        """`slot_use`, or None when the main loop does not answer within `timeout_s` (serve's
        supervisor reads a wedged loop from it: serve/engine/supervisor.py)."""
        if not self.alive or self.client is None:
            return None
        try:
            return await asyncio.wait_for(self.slot_use(timeout_s), timeout_s)
        except (asyncio.TimeoutError, httpx.HTTPError, EdgepickError, RuntimeError):
            return None

    # -- in-flight accounting, so a drain knows when the last request on this engine ended --
    def begin(self) -> None:
        self.inflight += 1
        self._idle.clear()

    def end(self) -> None:
        self.inflight -= 1
        if self.inflight <= 0:
            self.inflight = 0
            self._idle.set()

    async def drain(self, timeout_s: float, abort: Callable[[], bool] | None = None) -> bool:
        """Wait for in-flight requests to finish; False when some were still running (at the
        timeout, or once `abort()` is true)."""
        end = time.monotonic() + timeout_s
        while not self._idle.is_set():
            left = end - time.monotonic()
            if left <= 0 or (abort is not None and abort()):
                return False
            try:
                await asyncio.wait_for(self._idle.wait(), min(left, ABORT_POLL_S))
            except asyncio.TimeoutError:
                pass
        return True

    async def stop(self, grace_s: float = 5.0, abort: Callable[[], bool] | None = None) -> None:
        """SIGTERM, then SIGKILL after `grace_s` (or as soon as `abort()` is true): a main loop
        wedged in one request never acts on SIGTERM, and the watchdog must win."""
        self.stopping = True
        if self.client is not None:
            await self.client.aclose()
        if self.proc is not None and self.proc.returncode is None:
            # a stopped (SIGSTOP) child cannot act on SIGTERM until it is continued
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            end = time.monotonic() + grace_s
            while self.proc.returncode is None and time.monotonic() < end:
                if abort is not None and abort():
                    break
                try:
                    await asyncio.wait_for(self.proc.wait(), ABORT_POLL_S)
                except asyncio.TimeoutError:
                    pass
            if self.proc.returncode is None:
                log.warning("engine pid %d did not stop on SIGTERM: SIGKILL", self.proc.pid)
                self.proc.kill()
                await self.proc.wait()
        if not self.keep_log:
            try:
                self.log_path.unlink()
            except OSError:
                pass


Engine = LlamaServer  # the default engine of serve's pool (EdgePool(engine_factory=...))
