"""Executors run jobs and hand their results back; the driver alone writes its store
(docs/scale.md).

`local` runs each job here, one after the other (each bench configuration still gets its own
worker process, as in a plain `edgepick run`); `ray` sends each job to a node carrying its device
tag. Both yield `JobResult`s as jobs finish, and report `queued / running / done / failed` events
for the progress table.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Callable, Iterator, Protocol

from edgepick.cluster.jobs import Job, JobResult, Row, execute
from edgepick.errors import EdgepickError

Event = Callable[[str, str], None]  # (job id, state): queued | running | done | failed
EXECUTORS = ("local", "ray")


class Executor(Protocol):
    name: str

    def run(self, jobs: list[Job], seeds: dict[str, list[Row]], event: Event) -> Iterator[JobResult]:
        """Run `jobs` (seeded with rows already stored), yielding each result as it arrives."""

    def close(self) -> None:
        """Release what the executor holds (a Ray connection it opened)."""


class LocalExecutor:
    """This machine, in process: the measurements a plain `edgepick run` makes."""

    name = "local"

    @staticmethod
    def check_devices(devices) -> None:
        foreign = sorted({d for d in devices if d not in (None, "local")})
        if foreign:
            raise EdgepickError(f"device(s) {', '.join(foreign)}: the local executor measures only "
                                "this machine; run with --executor ray, where each device's jobs "
                                "go to the node that carries its tag")

    def run(self, jobs: list[Job], seeds: dict[str, list[Row]], event: Event) -> Iterator[JobResult]:
        self.check_devices(j.device for j in jobs)
        for job in jobs:
            event(job.id, "queued")
        done: dict[str, JobResult] = {}
        for job in ordered(jobs):
            event(job.id, "running")
            res = execute(job, seeds.get(job.id), done.get(job.after) if job.after else None)
            done[job.id] = res
            event(job.id, "done" if res.ok else "failed")
            yield res

    def close(self) -> None:
        pass


def ordered(jobs: list[Job]) -> list[Job]:
    """Jobs others wait for first, the rest in their given order."""
    needed = {j.after for j in jobs if j.after}
    return [j for j in jobs if j.id in needed] + [j for j in jobs if j.id not in needed]


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Hold Ctrl-C while one job's rows are written, so the store never holds half a job."""
    caught: list[object] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda *a: caught.append(a))
    except ValueError:  # not the main thread: nothing to defer
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            raise KeyboardInterrupt
