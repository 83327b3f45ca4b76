"""The CLI's `RunDisplay` (edgepick/progress.py): what `edgepick run` shows while the plan runner
or the farm works. An overall bar and one bar per stage, lines of narration, and the farm's table
of jobs by device, all on one console (stderr, so stdout keeps the JSON of `--json`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn,
                           TimeElapsedColumn)

from edgepick.cli.job_board import DeviceBoard
from edgepick.cli.output import err_console
from edgepick.cli.progress_lines import progress_lines
from edgepick.progress import ProgressEvent, Tick


class _Bars:
    def __init__(self, prog: Progress, total: int) -> None:
        self.prog = prog
        self.main: TaskID = prog.add_task("", total=total, stage="pipeline")

    def overall(self, what: str, advance: int = 0) -> None:
        self.prog.update(self.main, description=what)
        if advance:
            self.prog.advance(self.main, advance)

    def stage(self, name: str) -> Tick:
        bar = self.prog.add_task("", total=None, stage=name)

        def tick(ev: ProgressEvent) -> None:
            done, total = ev.done, ev.total
            if total is not None and total <= 0:  # nothing to do here: show it complete
                done = total = 1
            self.prog.update(bar, completed=done, total=total, description=ev.what[:60])

        return tick


class _LineBars:
    """Where no bar can be drawn (a log file, CI, `make run > log`): a rich bar would show
    nothing until the run ended, so each step is one line when it starts and the step running is
    repeated every 10 s (cli/progress_lines)."""

    def __init__(self, say, tick: Tick) -> None:
        self.say, self.tick, self.last = say, tick, ""

    def overall(self, what: str, advance: int = 0) -> None:
        if what and what != self.last:
            self.last = what
            self.say(what)

    def stage(self, name: str) -> Tick:
        def tick(ev: ProgressEvent) -> None:
            self.tick(ProgressEvent(ev.done, ev.total, f"{name}: {ev.what}" if ev.what else name))

        return tick


class RichRunDisplay:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or err_console

    def say(self, line: str) -> None:
        self.console.print(line, highlight=False)

    @contextmanager
    def bars(self, total: int) -> Iterator[_Bars | _LineBars]:
        if not self.console.is_terminal:
            with progress_lines(self.say) as tick:
                yield _LineBars(self.say, tick)
            return
        with Progress(TextColumn("[bold]{task.fields[stage]:<9}"), BarColumn(),
                      MofNCompleteColumn(), TextColumn("{task.description}"),
                      TimeElapsedColumn(), console=self.console, transient=False) as prog:
            yield _Bars(prog, total)

    @contextmanager
    def board(self) -> Iterator[DeviceBoard]:
        with DeviceBoard([], self.console) as board:
            yield board
