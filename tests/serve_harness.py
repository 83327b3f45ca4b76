"""`edgepick serve` started as a user would (a child process on 127.0.0.1, a free port), waited
for by its /health, and always stopped; helpers to read its /metrics and its engine's slot use."""

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

    def openai(self, key: str = "x", timeout: float = 60):
        """The official client on this server, as the tests use it: no retries, bounded."""
        import openai

        return openai.OpenAI(base_url=self.v1, api_key=key, max_retries=0, timeout=timeout)

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

    def engine_pids(self) -> list[int]:
        return [p.pid for p in self._engines()]

    def engine_ports(self) -> list[int]:
        ports = []
        for child in self._engines():
            try:
                cmd = child.cmdline()
            except psutil.Error:
                continue
            ports.append(int(cmd[cmd.index("--port") + 1]))
        return ports

    def _engines(self) -> list[psutil.Process]:
        out = []
        for child in psutil.Process(self.proc.pid).children(recursive=True):
            try:
                if "--port" in child.cmdline():
                    out.append(child)
            except psutil.Error:
                continue
        return out

    def healthy(self) -> bool:
        """Does /health answer 200 now?"""
        try:
            return httpx.get(self.url + "/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def slot_use(self, key: str | None = None) -> dict:
        """edgepick's slot accounting beside the engine's own, read through edgepick (the
        engine itself is locked: its /slots is off and its /metrics needs its key)."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        r = httpx.get(self.url + "/admin/engine/slots", headers=headers, timeout=10)
        r.raise_for_status()
        return r.json()

    def engine_slots(self, key: str | None = None) -> list[dict]:
        """One entry per slot, `is_processing` as llama-server's /slots had it."""
        use = self.slot_use(key)
        return [{"is_processing": i < use["engine_processing"]} for i in range(use["slots"])]


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
    from serve_spawn import spawn_serve

    need_llama_server()
    log = tmp / f"serve-{len(list(tmp.glob('serve-*.log')))}.log"
    with spawn_serve(["--log-dir", str(tmp), *args], log, env, ready, 120) as (url, proc):
        yield Served(proc, url, log)


def chat_and_embedding_deploy(tmp: Path, name: str, chat: str, embed: str, n_ctx: int = 512,
                              embed_slots: int = 1) -> Path:
    """A deploy.yaml serving `chat` as `name` beside an embedding engine on `embed`."""
    from edgepick.records.deploy import DeployConfig, DeployModel, EmbeddingEngine
    from edgepick.registry.store import sha256_of

    cfg = DeployConfig(model=DeployModel(name=name, path=chat, sha256=sha256_of(chat)),
                       embeddings=EmbeddingEngine(model=embed, pooling="mean", slots=embed_slots))
    cfg.runtime.n_ctx = n_ctx
    return cfg.dump(tmp / "deploy.yaml")


def module_server(name: str, *args: str, key: str | None = None):
    """(server, client) fixtures for a test module: serve on the tiny model with `args` (and
    `--api-key key`), started once for the module; the client is the official one."""
    extra = ["--api-key", key] if key else []

    @pytest.fixture(scope="module")
    def server(tiny_model, tmp_path_factory):
        with serve(["-m", tiny_model, *args, *extra], tmp_path_factory.mktemp(name)) as s:
            yield s

    @pytest.fixture(scope="module")
    def client(server):
        return server.openai(key or "x")

    return server, client


def hog_engine(tmp_path, mib: int, rate: int = 0, once: bool = False) -> tuple[dict, object]:
    """A llama-server whose process tree grows by `mib` MiB once the returned gate file exists:
    a child allocating that much, as a leak would (the watchdog sums the tree); at once, or
    `rate` MiB/s (in steps of a tenth of a second) until stopped; with `once`, only the first
    engine to see the gate leaks (it takes the gate away)."""
    import sys

    from edgepick.llama_tools import tool_path

    hog = tmp_path / "hog.py"
    hog.write_text(
        "import os, sys, time\n"
        "gate, mib, parent = sys.argv[1], int(sys.argv[2]), os.getppid()\n"
        "while not os.path.exists(gate):\n"
        "    if os.getppid() != parent: sys.exit(0)\n"
        "    time.sleep(0.05)\n"
        f"rate, once = {rate}, {once}\n"
        "if once: os.remove(gate)\n"
        "step = max(rate // 10, 1) if rate else mib\n"
        "held = []\n"
        "while os.getppid() == parent:\n"
        "    if len(held) * step < mib: held.append(b'x' * (step << 20))\n"
        "    time.sleep(0.1)\n")
    gate = tmp_path / "leak"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "llama-server"
    wrapper.write_text(f"#!/bin/sh\n{sys.executable} {hog} {gate} {mib} &\n"
                       f"exec {tool_path('llama-server')} \"$@\"\n")
    wrapper.chmod(0o755)
    return {"EDGEPICK_LLAMA_BIN": str(bindir)}, gate
