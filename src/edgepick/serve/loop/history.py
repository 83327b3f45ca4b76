"""Past scrapes of the server's own /metrics, so `edgepick monitor --window 5m` can take the
change of every counter and bucket over the last five minutes from one call, without a
Prometheus server. A snapshot is taken at start (all zeros) and every
`every_s`; they are kept compressed for `keep_s`. `GET /metrics/history?ago=300` answers the
newest snapshot at least 300 s old (the start one when the server is younger) and says its age
in `x-edgepick-snapshot-age-seconds`."""

from __future__ import annotations

import asyncio
import bisect
import time
import zlib
from collections import deque
from typing import Callable

from prometheus_client import CollectorRegistry, generate_latest

AGE_HEADER = "x-edgepick-snapshot-age-seconds"


class MetricsHistory:
    def __init__(self, registry: CollectorRegistry, every_s: float = 10.0, keep_s: float = 7200.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.registry = registry
        self.every_s = every_s
        self.keep_s = keep_s
        self._clock = clock
        self._start: tuple[float, bytes] | None = None
        self._snaps: deque[tuple[float, bytes]] = deque()
        self.take()

    def take(self) -> None:
        now = self._clock()
        snap = (now, zlib.compress(generate_latest(self.registry)))
        if self._start is None:
            self._start = snap  # kept for ever: "since start" and windows longer than uptime
            return
        self._snaps.append(snap)
        while self._snaps and now - self._snaps[0][0] > self.keep_s:
            self._snaps.popleft()

    def at(self, ago_s: float) -> tuple[float, str]:
        """(age in seconds, exposition text) of the newest snapshot taken `ago_s` or more ago."""
        assert self._start is not None
        now = self._clock()
        cutoff = now - ago_s
        times = [t for t, _ in self._snaps]
        i = bisect.bisect_right(times, cutoff) - 1
        t, blob = self._snaps[i] if i >= 0 else self._start
        return now - t, zlib.decompress(blob).decode()

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            self.take()
