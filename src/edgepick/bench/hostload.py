"""How busy the host was around a measurement (seed 000 §5.2: background load halves the speed).

From `/proc/stat`: the run queue (`procs_running`), CPU time used by everything (`user` + `nice` +
`system` + `irq` + `softirq`) and `steal` (time a hypervisor gave this VM's CPUs to others).
Our own share is this process and the processes it started during the measurement (the bench
worker); everything else is *other work*. A measurement during which other work used more than
`contended_share` of all CPUs is **contended**: its speed says more about the neighbours than
about the candidate.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

import psutil

from edgepick.units import whole_pct

CONTENDED_SHARE = 0.25  # other work above a quarter of all CPUs: on 2 cores, half a core busy
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Snapshot:
    t: float  # time.monotonic()
    busy_s: float  # CPU seconds used by everything, all CPUs
    steal_s: float
    own_s: float  # CPU seconds used by us (this process and the workers it started)
    run_queue: int | None
    ncpu: int


def parse_proc_stat(text: str) -> tuple[float, float, int | None]:
    """(busy seconds, steal seconds, procs_running) from /proc/stat's text."""
    busy = steal = 0.0
    running = None
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            v = [int(x) for x in parts[1:]] + [0] * 10
            busy = (v[0] + v[1] + v[2] + v[5] + v[6]) / _TICK
            steal = v[7] / _TICK
        elif parts and parts[0] == "procs_running":
            running = int(parts[1])
    return busy, steal, running


class OwnTree:
    """CPU seconds of this process plus the processes that appeared below it after creation
    (the worker); children already running before (say, a test's busy neighbour) are others."""

    def __init__(self) -> None:
        self.me = psutil.Process()
        self.before = {p.pid for p in self._children()}
        self.seen: dict[int, float] = {}

    def _children(self) -> list[psutil.Process]:
        try:
            return self.me.children(recursive=True)
        except psutil.Error:
            return []

    def cpu_s(self) -> float:
        t = self.me.cpu_times()
        total = t.user + t.system
        for p in self._children():
            if p.pid in self.before:
                continue
            try:
                c = p.cpu_times()
                self.seen[p.pid] = c.user + c.system
            except psutil.Error:
                pass
        # a worker that finished keeps counting with its last reading (reaped children land in
        # children_user/system, which would count it twice)
        return total + sum(self.seen.values())


def snapshot(own: OwnTree | None = None, stat_path: str = "/proc/stat") -> Snapshot | None:
    try:
        with open(stat_path) as fh:
            busy, steal, running = parse_proc_stat(fh.read())
    except OSError:
        return None
    return Snapshot(t=time.monotonic(), busy_s=busy, steal_s=steal,
                    own_s=own.cpu_s() if own else 0.0, run_queue=running,
                    ncpu=os.cpu_count() or 1)


def load_between(a: Snapshot, b: Snapshot, *, queue: list[int] | None = None) -> dict:
    """The host_load record of an interval: other work's and steal's share of all CPUs, and
    the run queue (mean of the samples, minus our own runnable threads is not attempted)."""
    wall = max(b.t - a.t, 1e-6) * a.ncpu
    other = max(0.0, (b.busy_s - a.busy_s) - (b.own_s - a.own_s)) / wall
    queues = [q for q in (queue or [a.run_queue, b.run_queue]) if q is not None]
    return {"other_cpu_share": round(min(other, 1.0), 3),
            "steal_share": round(max(0.0, b.steal_s - a.steal_s) / wall, 3),
            "run_queue": round(sum(queues) / len(queues), 2) if queues else None,
            "interval_s": round(b.t - a.t, 2), "cpus": a.ncpu}


def is_contended(load: dict | None, share: float = CONTENDED_SHARE) -> bool:
    return bool(load) and (load.get("other_cpu_share") or 0) + (load.get("steal_share") or 0) > share


def describe(load: dict | None) -> str:
    if not load:
        return "host load not read"
    text = f"other work {whole_pct(load['other_cpu_share'])} of {load['cpus']} CPUs"
    if load.get("steal_share"):
        text += f", steal {whole_pct(load['steal_share'])}"
    if load.get("run_queue") is not None:
        text += f", run queue {load['run_queue']:g}"
    return text


def wait_quiet(max_wait_s: float, share: float = CONTENDED_SHARE, window_s: float = 1.0,
               read=None, pause=None) -> dict:
    """Wait, at most `max_wait_s`, for a window of `window_s` in which other work used at most
    `share` of the CPUs. Returns {"waited_s", "quiet", "load"}. `read` (a Snapshot each call)
    and `pause` are injectable so the logic is tested with given readings, not with whatever
    this shared host happens to be doing."""
    if read is None:
        own = OwnTree()
        read = lambda: snapshot(own)  # noqa: E731
    if pause is None:
        pause = lambda: threading.Event().wait(window_s)  # noqa: E731
    first = read()
    a = first
    while True:
        pause()
        b = read()
        if a is None or b is None:
            return {"waited_s": 0.0, "quiet": None, "load": None}
        load = load_between(a, b)
        waited = round(b.t - first.t, 2)
        if not is_contended(load, share):
            return {"waited_s": waited, "quiet": True, "load": load}
        if waited >= max_wait_s:
            return {"waited_s": waited, "quiet": False, "load": load}
        a = b
