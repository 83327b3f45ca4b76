"""The one progress event every long step reports, and the callback type that receives it.

Stage entry points take `progress: Tick` and call it with a `ProgressEvent`; inner loops (a
quantize tool's tensors, a conversion's blocks, a fidelity pass's chunks) report the same event,
so one display adapter serves them all (one callback type instead of three).

A whole run (the plan runner, the farm) shows its bars, lines and job table through a
`RunDisplay`, which the CLI implements: nothing below the CLI draws on the terminal itself.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    done: int  # steps finished
    total: int | None  # steps in all; None while unknown
    what: str = ""  # what is running, for the display


Tick = Callable[[ProgressEvent], None]


def silent(event: ProgressEvent) -> None:
    """For callers that show no progress."""


class StageBars(Protocol):
    """A run's bars: one overall line, and one bar per stage (`stage` gives the stage's Tick)."""

    def overall(self, what: str, advance: int = 0) -> None: ...

    def stage(self, name: str) -> Tick: ...


class JobBoard(Protocol):
    """The farm's view of its jobs: jobs are added as their stage comes, then move through
    states (queued, running, done, failed, stored)."""

    def add(self, jobs) -> None: ...

    def event(self, job_id: str, state: str) -> None: ...


class RunDisplay(Protocol):
    """What a whole run shows while it works, from the plan runner and the farm alike. The CLI
    implements it (with rich); orchestration only calls it, so it never draws anything itself."""

    def say(self, line: str) -> None: ...

    def bars(self, total: int) -> AbstractContextManager[StageBars]: ...

    def board(self) -> AbstractContextManager[JobBoard]: ...


class _QuietBars:
    def overall(self, what: str, advance: int = 0) -> None:
        pass

    def stage(self, name: str) -> Tick:
        return silent


class _QuietBoard:
    def add(self, jobs) -> None:
        pass

    def event(self, job_id: str, state: str) -> None:
        pass


class QuietDisplay:
    """A `RunDisplay` that shows nothing: for callers with no terminal (tests, a library)."""

    def say(self, line: str) -> None:
        pass

    @contextmanager
    def bars(self, total: int) -> Iterator[StageBars]:
        yield _QuietBars()

    @contextmanager
    def board(self) -> Iterator[JobBoard]:
        yield _QuietBoard()
