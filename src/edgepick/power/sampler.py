"""A background thread that reads a set of probes every `period_s` in the parent process, so
sampling never blocks the measured worker. A probe that fails is recorded once and dropped."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable


class Sampler:
    def __init__(self, probes: dict[str, Callable[[], Any]], period_s: float = 0.5):
        self.probes = dict(probes)
        self.period_s = period_s
        self.samples: list[tuple[float, dict[str, Any]]] = []
        self.errors: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="edgepick-sampler", daemon=True)

    def _read_once(self) -> None:
        row: dict[str, Any] = {}
        for name, probe in list(self.probes.items()):
            try:
                row[name] = probe()
            except Exception as exc:  # a probe's failure is a note, never the measurement's
                self.errors[name] = str(exc) or type(exc).__name__
                del self.probes[name]
        self.samples.append((time.monotonic(), row))

    def _loop(self) -> None:
        while True:
            self._read_once()
            if self._stop.wait(self.period_s):
                break

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()
            self._read_once()  # a closing reading, so the interval's end is covered

    def series(self, name: str) -> list[tuple[float, Any]]:
        return [(t, row[name]) for t, row in self.samples if row.get(name) is not None]
