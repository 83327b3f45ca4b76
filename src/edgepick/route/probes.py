"""The signals a routing policy weighs (seed 000 §6.4): network reachability and latency (an
active probe, cached), and battery, temperature and memory pressure of the device, read the way
`serve`'s hot swap reads them (the OS, or a signals file for devices and tests without sensors).
Input length and task type are per request (see router.py).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import httpx

from edgepick.serve.pool.signals import Signals, read_signals


class DeviceSignals:
    """Device state as `serve`'s hot swap reads it (the OS, or the signals file when given),
    re-read at most every `interval_s` seconds."""

    def __init__(self, signals_file: str | None = None, interval_s: float = 2.0) -> None:
        self.signals_file = signals_file
        self.interval_s = interval_s
        self._state: Signals | None = None
        self._at = 0.0

    def read(self) -> Signals:
        now = time.monotonic()
        if self._state is None or now - self._at >= self.interval_s:
            self._state, self._at = read_signals(self.signals_file), now
        return self._state


@dataclass
class NetworkState:
    reachable: bool | None = None  # None: never probed
    latency_ms: float | None = None
    why: str = ""
    at: float = 0.0


class NetworkProbe:
    """Is the cloud reachable, and how fast? An active probe (GET `url`, any HTTP answer counts
    as reachable) with a timeout, cached for `interval_s`; a stale value is refreshed in the
    background so a request never waits on the probe, except the very first. Real calls to the
    cloud update it too (`observe`), so an outage is seen at once."""

    def __init__(self, url: str, timeout_s: float = 1.0, interval_s: float = 10.0,
                 headers: dict | None = None) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.interval_s = interval_s
        self.headers = headers or {}
        self.state = NetworkState()
        self._task: asyncio.Task | None = None

    async def probe(self) -> NetworkState:
        t0 = time.monotonic()
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as c:
                await c.get(self.url, headers=self.headers)
            self.state = NetworkState(True, (time.monotonic() - t0) * 1e3, "", time.monotonic())
        except httpx.TimeoutException:
            self.state = NetworkState(False, None, f"probe timed out after {self.timeout_s:g} s",
                                      time.monotonic())
        except httpx.HTTPError as exc:
            self.state = NetworkState(False, None, f"unreachable ({type(exc).__name__})",
                                      time.monotonic())
        return self.state

    async def current(self) -> NetworkState:
        if self.state.reachable is None:
            return await self.probe()
        stale = time.monotonic() - self.state.at >= self.interval_s
        if stale and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self.probe())
        return self.state

    def observe(self, ok: bool, latency_ms: float | None = None, why: str = "") -> None:
        self.state = NetworkState(ok, latency_ms if ok else None, why, time.monotonic())

    async def aclose(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

