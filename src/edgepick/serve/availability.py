"""The figures of seed 000 §7.4 that no single request shows: how long `/health` was ready
(availability), how the engine died (exit signal; OOM kills confirmed by the cgroup's own
counter where readable), the peak engine memory since start, for `/metrics` and `monitor`.

Availability is exported as two counters, ready seconds and uptime seconds, so any window's
availability is `increase(ready) / increase(uptime)`, in Prometheus as in `edgepick monitor`.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

log = logging.getLogger("edgepick.serve")
CGROUP_ROOT = Path("/sys/fs/cgroup")


class ReadyClock:
    """Seconds since start and seconds spent ready, from the ready transitions."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.started = clock()
        self._ready_since: float | None = None
        self._ready_total = 0.0
        self._lock = threading.Lock()

    def mark(self, ready: bool) -> None:
        with self._lock:
            now = self._clock()
            if ready and self._ready_since is None:
                self._ready_since = now
            elif not ready and self._ready_since is not None:
                self._ready_total += now - self._ready_since
                self._ready_since = None

    def uptime_s(self) -> float:
        return self._clock() - self.started

    def ready_s(self) -> float:
        with self._lock:
            extra = self._clock() - self._ready_since if self._ready_since is not None else 0.0
            return self._ready_total + extra


def signal_name(returncode: int | None) -> str:
    """'SIGKILL' for -9 (asyncio's way of saying "killed by signal 9"), 'exit' otherwise."""
    if returncode is None or returncode >= 0:
        return "exit"
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal{-returncode}"


def cgroup_oom_kills(pid: int, root: Path = CGROUP_ROOT) -> tuple[Path, int] | None:
    """(counter file, oom_kill count) of the memory cgroup holding `pid`: cgroup v2's
    memory.events or v1's memory.oom_control. None when neither is readable."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    candidates: list[Path] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if controllers == "":
            candidates += [root / rel / "memory.events", root / "memory.events"]
        elif "memory" in controllers.split(","):
            candidates += [root / "memory" / rel / "memory.oom_control",
                           root / "memory" / "memory.oom_control"]  # a container's own root
    for f in candidates:
        count = read_oom_kill(f)
        if count is not None:
            return f, count
    return None


def read_oom_kill(path: Path) -> int | None:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def kernel_oom_killed(pid: int, kmsg: str = "/dev/kmsg") -> bool | None:
    """Whether the kernel log says it OOM-killed `pid` ("Killed process PID (…)"), read without
    blocking; None when the log is not readable (most containers, non-root)."""
    try:
        fd = os.open(kmsg, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    pattern = re.compile(rf"Killed process {pid}\b".encode())
    try:
        while True:
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                return False
            except OSError:  # EPIPE: a record overwritten while reading; keep going
                continue
            if not record:
                return False
            if pattern.search(record):
                return True
    finally:
        os.close(fd)


class EngineFate:
    """Exit signals and OOM kills of the engine, and its peak memory. `watch(pid)` is called
    while the engine runs (the cgroup is read from its /proc entry), `exited(returncode)` when
    it died on its own."""

    def __init__(self, kmsg: str = "/dev/kmsg") -> None:
        self.kmsg = kmsg
        self.exits: dict[str, int] = {}
        self.oom_confirmed = 0  # SIGKILL and the cgroup's oom_kill counter rose
        self.oom_kernel = 0  # SIGKILL and the kernel log names the engine's pid
        self.oom_suspected = 0  # SIGKILL, and neither the cgroup nor the kernel log readable
        self.peak_memory = 0
        self._counter: tuple[Path, int] | None = None
        self._pid: int | None = None

    def watch(self, pid: int | None) -> None:
        if pid is not None and pid != self._pid:
            self._pid = pid
            self._counter = cgroup_oom_kills(pid)

    def sample_memory(self, value: float) -> None:
        self.peak_memory = max(self.peak_memory, int(value or 0))

    def exited(self, returncode: int | None) -> str:
        """Counts one exit the engine did not ask for; returns 'oom', 'killed' or 'crash'."""
        name = signal_name(returncode)
        self.exits[name] = self.exits.get(name, 0) + 1
        counter, pid, self._pid = self._counter, self._pid, None
        if name != "SIGKILL":
            return "crash"
        now = read_oom_kill(counter[0]) if counter is not None else None
        if now is not None and now > counter[1]:
            self.oom_confirmed += 1
            log.error("engine killed by the kernel's OOM killer (%s: oom_kill %d → %d)",
                      counter[0], counter[1], now)
            return "oom"
        in_log = kernel_oom_killed(pid, self.kmsg) if pid is not None else None
        if in_log:
            self.oom_kernel += 1
            log.error("engine killed by the kernel's OOM killer (kernel log: Killed process %d)",
                      pid)
            return "oom"
        if now is None and in_log is None:
            self.oom_suspected += 1
            log.error("engine killed by SIGKILL; neither a cgroup OOM counter nor the kernel log "
                      "is readable, so it is counted as a suspected OOM kill")
            return "oom"
        log.error("engine killed by SIGKILL from outside (no OOM kill in the cgroup's counter "
                  "or the kernel log)")
        return "killed"


class AvailabilityCollector(Collector):
    def __init__(self, clock: ReadyClock, fate: EngineFate,
                 memory: Callable[[], float] | None = None) -> None:
        self.clock = clock
        self.fate = fate
        self.memory = memory

    def collect(self) -> Iterator:
        if self.memory is not None:
            self.fate.sample_memory(self.memory())
        up = CounterMetricFamily("edgepick_uptime_seconds", "Seconds since serve started")
        up.add_metric([], self.clock.uptime_s())
        ready = CounterMetricFamily("edgepick_ready_seconds",
                                    "Seconds /health answered ready (availability = "
                                    "ready / uptime over any window)")
        ready.add_metric([], self.clock.ready_s())
        exits = CounterMetricFamily("edgepick_engine_exits",
                                    "Engine exits it did not ask for, by signal", labels=["signal"])
        for name in sorted(set(self.fate.exits) | {"SIGKILL"}):
            exits.add_metric([name], self.fate.exits.get(name, 0))
        oom = CounterMetricFamily("edgepick_engine_oom_kills",
                                  "Engine OOM kills: SIGKILL confirmed by the cgroup's oom_kill "
                                  "counter or the kernel log, or suspected (neither readable)",
                                  labels=["evidence"])
        oom.add_metric(["cgroup"], self.fate.oom_confirmed)
        oom.add_metric(["kernel"], self.fate.oom_kernel)
        oom.add_metric(["none"], self.fate.oom_suspected)
        peak = GaugeMetricFamily("edgepick_engine_peak_memory_bytes",
                                 "Highest engine RssAnon + VmSwap sampled since serve started")
        peak.add_metric([], self.fate.peak_memory)
        yield from (up, ready, exits, oom, peak)
