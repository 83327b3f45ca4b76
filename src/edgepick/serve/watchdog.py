"""Memory watchdog: samples the engine process tree's RssAnon + VmSwap and, over the threshold,
drains and restarts it (seed 000 §5.3: a memory threshold triggers cleanup or restart; never
assume the framework has no leaks). Restarts are logged with their reason and counted.

A limit the engine cannot meet is refused, not looped on: an engine whose own footprint, right
after it loads and before any request, is over the limit is not started (serve exits with the
figure), and the pool's restart budget (EdgePool.max_restarts within restart_window_s) stops
restarts that do not bring memory back under the limit, reporting the server degraded.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

from edgepick.errors import EdgepickError
from edgepick.serve.edge import EdgePool
from edgepick.serve.engine import Engine

log = logging.getLogger("edgepick.serve")


class MemoryWatchdog:
    def __init__(self, pool: EdgePool, limit_bytes: int | None, every_s: float = 1.0,
                 cooldown_s: float = 30.0) -> None:
        self.pool = pool
        self.limit_bytes = limit_bytes
        self.every_s = every_s
        self.cooldown_s = cooldown_s
        self._last_restart = -math.inf
        pool.metrics.memory_limit.set(limit_bytes or 0)
        if limit_bytes:
            pool.start_checks.append(self.check_footprint)

    def check_footprint(self, engine: Engine) -> None:
        """Refuse an engine that is over the limit before it has served anything."""
        mem = engine.memory_bytes()
        if self.limit_bytes and mem > self.limit_bytes:
            raise EdgepickError(
                f"--mem-limit {self.limit_bytes / 2**20:.0f} MiB is below the engine's own "
                f"footprint of {mem / 2**20:.0f} MiB (RssAnon+VmSwap right after loading "
                f"{engine.spec.name}@{engine.spec.version}, before any request): it would "
                "restart in a loop; raise the limit or shrink the context or slots")

    def sample(self) -> int:
        engine = self.pool.engine
        mem = engine.memory_bytes() if engine is not None else 0
        self.pool.last_memory = mem
        return mem

    async def check_once(self) -> bool:
        """Sample, and restart when over the limit; True when a restart happened."""
        if not self.pool.ready:
            return False
        mem = self.sample()
        limit = self.limit_bytes
        if not limit or mem <= limit or time.monotonic() - self._last_restart < self.cooldown_s:
            return False
        if self.pool.degraded:  # the budget is spent: restarting again would only loop
            return False
        log.warning("engine memory %.1f MiB (RssAnon+VmSwap) is over the limit of %.1f MiB: "
                    "draining and restarting", mem / 2**20, limit / 2**20)
        self._last_restart = time.monotonic()
        return await self.pool.restart("memory")

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            try:
                await self.check_once()
            except Exception:  # the watchdog must outlive any one failed sample or restart
                log.exception("memory watchdog")
