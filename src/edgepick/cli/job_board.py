"""The farm's `JobBoard` (edgepick/progress.py) on the terminal: a live table with one row per
device, jobs queued, running, done, failed, and already stored. It goes to the CLI's shared
console and, like every edgepick table, reads at the terminal's width (at 80 columns, long device
tags turn it into one block per device)."""

from __future__ import annotations

from collections import Counter

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from edgepick.cli.output import err_console, fit_table

STATES = ("queued", "running", "done", "failed", "stored")
ANY_NODE = "(any node)"


class DeviceBoard:
    def __init__(self, jobs=(), console: Console | None = None) -> None:
        self.where: dict[str, str] = {}
        self.state: dict[str, str] = {}
        self.devices: list[str] = []
        self.console = console or err_console
        self._live: Live | None = None
        self.add(jobs)

    def add(self, jobs) -> None:
        """Jobs of a later stage (the eval waits for the bench), shown from now on."""
        self.where.update({j.id: (j.device or ANY_NODE) for j in jobs})
        self.devices = list(dict.fromkeys([*self.devices, *self.where.values()]))

    def counts(self) -> dict[str, Counter]:
        out = {d: Counter() for d in self.devices}
        for job_id, st in self.state.items():
            out[self.where[job_id]][st] += 1
        return out

    def event(self, job_id: str, state: str) -> None:
        if state == "running" and self.state.get(job_id) in ("done", "failed"):
            return  # a late start report from a retried attempt that already ended
        self.state[job_id] = state
        if self._live is not None:
            self._live.update(self.table())

    def table(self) -> Table | Group:
        t = Table(title="jobs by device", title_justify="left")
        t.add_column("device")
        for s in STATES:
            t.add_column(s, justify="right")
        for device, c in self.counts().items():
            t.add_row(device, *(str(c[s]) for s in STATES))
        return fit_table(t, self.console.width)

    def __enter__(self) -> "DeviceBoard":
        self._live = Live(self.table(), console=self.console, refresh_per_second=4,
                          transient=False)
        self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.update(self.table())
            self._live.__exit__(*exc)
            self._live = None
