"""Memory watchdog: samples the engine process tree's RssAnon + VmSwap and, over the threshold,
drains and restarts it (seed 000 §5.3: a memory threshold triggers cleanup or restart; never
assume the framework has no leaks). Restarts are logged with their reason and counted.

A limit the engine cannot meet is refused, not looped on: an engine whose own footprint, right
after it loads and before any request, is over the limit is not started (serve exits with the
figure), and the supervisor's restart budget (max_restarts within restart_window_s) stops
restarts that do not bring memory back under the limit, reporting the server degraded.

The watchdog always wins: it samples every `every_s` (0.1 s by default: a leak
of 300 MB/s moves 30 MB between two samples) whatever the engine's state (a wedged engine is
not ready, and is still watched); a drain lasts only while memory stays under the hard ceiling
(limit + HARD_MARGIN), and the stop is SIGTERM then SIGKILL after a short grace, at once past
the ceiling. Every sample feeds the peak-memory gauge, so the peak is the highest one seen.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

from edgepick.errors import EdgepickError
from edgepick.serve.engine.process import EngineProcess
from edgepick.serve.engine.supervisor import EngineSupervisor

log = logging.getLogger("edgepick.serve")


HARD_MARGIN = 0.10  # share of the limit a drain may run over before the engine is killed


class MemoryWatchdog:
    """Watches one engine through its supervisor (an EdgePool's `supervisor`)."""

    def __init__(self, supervisor: EngineSupervisor, limit_bytes: int | None,
                 every_s: float = 0.1, cooldown_s: float = 30.0) -> None:
        self.supervisor = supervisor
        self.limit_bytes = limit_bytes
        self.hard_bytes = int(limit_bytes * (1 + HARD_MARGIN)) if limit_bytes else None
        self.every_s = every_s
        self.cooldown_s = cooldown_s
        self._last_restart = -math.inf
        supervisor.metrics.memory_limit.set(limit_bytes or 0)
        if limit_bytes:
            supervisor.start_checks.append(self.check_footprint)
            supervisor.memory_abort = self.over_hard_limit  # any stop's grace ends past the ceiling

    def check_footprint(self, engine: EngineProcess) -> None:
        """Refuse an engine that is over the limit before it has served anything."""
        mem = engine.memory_bytes()
        if self.limit_bytes and mem > self.limit_bytes:
            raise EdgepickError(
                f"--mem-limit {self.limit_bytes / 2**20:.0f} MiB is below the engine's own "
                f"footprint of {mem / 2**20:.0f} MiB (RssAnon+VmSwap right after loading "
                f"{engine.spec.name}@{engine.spec.version}, before any request): it would "
                "restart in a loop; raise the limit or shrink the context or slots")

    def sample(self) -> int:
        engine = self.supervisor.engine
        mem = engine.memory_bytes() if engine is not None else 0
        self.supervisor.last_memory = mem
        if self.supervisor.role == "chat":
            self.supervisor.metrics.engine_fate.sample_memory(mem)
        return mem

    def over_hard_limit(self) -> bool:
        """Sampled now: past the ceiling a drain or a SIGTERM grace is cut short."""
        return self.hard_bytes is not None and self.sample() > self.hard_bytes

    async def check_once(self) -> bool:
        """Sample, and restart when over the limit; True when a restart happened."""
        engine = self.supervisor.engine
        if engine is None or engine.stopping or not engine.alive:
            return False
        mem = self.sample()
        limit = self.limit_bytes
        if not limit or mem <= limit:
            return False
        hard = self.hard_bytes is not None and mem > self.hard_bytes
        if time.monotonic() - self._last_restart < self.cooldown_s and not hard:
            return False
        log.warning("engine memory %.1f MiB (RssAnon+VmSwap) is over the limit of %.1f MiB: "
                    "%s", mem / 2**20, limit / 2**20,
                    "stopping it now" if hard else "draining and restarting")
        self._last_restart = time.monotonic()
        return await self.supervisor.restart("memory", drain=not hard, abort=self.over_hard_limit)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            try:
                await self.check_once()
            except Exception:  # the watchdog must outlive any one failed sample or restart
                log.exception("memory watchdog")
