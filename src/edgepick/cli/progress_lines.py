"""Progress where no bar can be drawn: when stderr is not a terminal (a log file, CI), a rich bar
shows nothing until the work is done, so a long step looks hung. Instead one plain line is
written when a step starts, and one every `every_s` seconds while it runs, with the step, its
count and the time elapsed."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from edgepick.progress import ProgressEvent

EVERY_S = 10.0


@contextmanager
def progress_lines(write: Callable[[str], None], every_s: float = EVERY_S,
                   clock: Callable[[], float] = time.monotonic) -> Iterator[Callable]:
    """Yields the progress callback; a heartbeat thread repeats the last state every `every_s`."""
    start = clock()
    state: dict = {"what": "starting", "done": 0, "total": None, "said": None}
    lock = threading.Lock()
    stop = threading.Event()

    def line() -> str:
        count = f" ({state['done']}/{state['total']})" if state["total"] else ""
        return f"{state['what']}{count}, {clock() - start:.0f} s"

    def update(ev: ProgressEvent) -> None:
        with lock:
            state.update(what=ev.what, done=ev.done, total=ev.total)
            if state["said"] != ev.what:  # a new step: said at once
                state["said"] = ev.what
                write(line())

    def beat() -> None:
        while not stop.wait(every_s):
            with lock:
                write(line())

    thread = threading.Thread(target=beat, name="progress-lines", daemon=True)
    thread.start()
    try:
        yield update
    finally:
        stop.set()
        thread.join(timeout=1.0)
