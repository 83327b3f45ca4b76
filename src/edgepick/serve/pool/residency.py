"""Which team models are resident, within a memory budget (seed 001 §6.3:
reloading on every switch is too slow, so swaps are few and batched).

A request for a model that is loaded enters at once. One that is not waits for a load; a load
that would exceed the budget first evicts the least recently used unpinned models (never a
pinned one, never one with requests in flight: it drains first, and takes no new work
meanwhile). Requests are grouped by model: while a model that would be evicted still has work
(in flight or waiting), a request for another waits up to `group_wait` seconds from its arrival
before it forces the swap, so that the resident model's queue empties first and one swap serves
every request waiting for the incoming model. On-demand models with a `ttl` are unloaded after
that many idle seconds. One load or eviction runs at a time (the swap lock).

llama-server's router mode (`--models-max`, tools/server/server-models.cpp `server_lru_sched`)
counts models, not bytes, and has no wait for grouping; docs/serve.md says why serve does this
itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from edgepick.serve.errors import DeadlineExceeded, EngineUnavailable, Overloaded, ResourceRefused
from edgepick.units import mib

log = logging.getLogger("edgepick.serve")
TTL_EVERY_S = 1.0  # how often idle models are looked at


@dataclass
class Resident:
    """One model's residency: its need, pin/ttl, and what it is doing."""

    name: str
    need: int  # bytes counted against the budget
    pin: bool = False
    ttl: float | None = None
    max_waiting: int = 1 << 30  # requests that may wait for its load (beyond: 429)
    estimated: bool = False  # need not measured (serve -m A -m B): estimated, never refused
    state: str = "unloaded"  # unloaded, loading, loaded, unloading
    inflight: int = 0
    waiting: int = 0
    draining: bool = False  # an eviction waits for its in-flight requests: no new ones
    # requests that waited for the load that just ended: they enter even if another load has
    # already begun to drain this model, so a swap always serves the batch it was made for
    reserved: int = 0
    last_used: float = field(default_factory=time.monotonic)
    failures: int = 0  # loads that failed; a waiter that saw one more than at its arrival gives up
    error: str = ""

    @property
    def busy(self) -> bool:
        return self.inflight > 0 or self.waiting > 0


class Residency:
    def __init__(self, models: list[Resident], budget: int | None,
                 load: Callable[[str], Awaitable[None]],
                 unload: Callable[[str], Awaitable[None]], group_wait: float,
                 events: "ResidencyEvents | None" = None) -> None:
        self.models = {m.name: m for m in models}
        self.budget = budget
        self.group_wait = group_wait
        self._load, self._unload = load, unload
        self.events = events or ResidencyEvents()
        self.changed = asyncio.Condition()
        self.swap_lock = asyncio.Lock()
        self._loads: dict[str, asyncio.Task] = {}

    def used(self, but: str | None = None) -> int:
        return sum(m.need for m in self.models.values()
                   if m.state != "unloaded" and m.name != but)

    def victims(self, name: str) -> list[Resident] | None:
        """The models to evict so `name` fits: least recently used first, idle before busy;
        None when even every unpinned one would not make room (a model whose need is only
        estimated is then served alone beside the pinned ones: its estimate passed at start)."""
        if self.budget is None:
            return []
        room = self.budget - self.used(but=name)
        want = self.models[name].need
        out: list[Resident] = []
        evictable = sorted((m for m in self.models.values() if m.name != name and not m.pin
                            and m.state in ("loaded", "loading")),
                           key=lambda m: (m.busy, m.last_used))
        for m in evictable:
            if room >= want:
                break
            out.append(m)
            room += m.need
        return out if room >= want or self.models[name].estimated else None

    async def acquire(self, name: str, deadline: float) -> None:
        """Return once `name` is loaded and counts this request in flight (`release` ends it);
        waits for a load within the deadline."""
        m = self.models[name]
        arrived = time.monotonic()
        async with self.changed:
            if m.state == "loaded" and not m.draining:
                return self._enter(m, waited=False)
            if m.waiting >= m.max_waiting:
                raise Overloaded(f"{m.waiting} requests already wait for model {name} to "
                                 "load", retry_after=1)
            m.waiting += 1
            failures = m.failures
            try:
                while not (m.state == "loaded" and (not m.draining or m.reserved > 0)):
                    if m.failures > failures:
                        raise EngineUnavailable(f"model {name} failed to load: {m.error}",
                                                retry_after=2)
                    now = time.monotonic()
                    if now >= deadline:
                        raise DeadlineExceeded(f"deadline passed while model {name} was "
                                               "waiting to load")
                    force_at = arrived + self.group_wait
                    if m.state == "unloaded" and name not in self._loads:
                        victims = self.victims(name)
                        if victims is None:
                            raise ResourceRefused(self.never_fits(name))
                        if now >= force_at or not any(v.busy for v in victims):
                            self._start_load(name)
                    wake = min(deadline, force_at if force_at > now else deadline)
                    try:
                        await asyncio.wait_for(self.changed.wait(), max(wake - now, 0.01))
                    except asyncio.TimeoutError:
                        pass
            except BaseException:
                m.waiting -= 1
                m.reserved = min(m.reserved, m.waiting)
                raise
            m.waiting -= 1
            m.reserved = max(m.reserved - 1, 0)
            self._enter(m, waited=True)

    def _enter(self, m: Resident, waited: bool) -> None:
        m.inflight += 1
        m.last_used = time.monotonic()
        if waited:
            self.events.waited(m.name)

    async def release(self, name: str) -> None:
        m = self.models[name]
        async with self.changed:
            m.inflight -= 1
            m.last_used = time.monotonic()
            self.changed.notify_all()

    def never_fits(self, name: str) -> str:
        pinned = sum(m.need for m in self.models.values() if m.pin and m.name != name)
        return (f"model {name} needs {mib(self.models[name].need)}; with the pinned models' "
                f"{mib(pinned)} it exceeds the memory budget {mib(self.budget)}")

    def _start_load(self, name: str) -> None:
        task = asyncio.create_task(self._swap_in(name))
        self._loads[name] = task
        task.add_done_callback(lambda t: self._loads.pop(name, None))

    async def _swap_in(self, name: str, cause: str = "demand") -> None:
        m = self.models[name]
        async with self.swap_lock:
            victims = self.victims(name) or []
            async with self.changed:
                for v in victims:
                    v.draining = True
            for v in victims:  # in-flight requests finish first (bounded by their deadlines)
                async with self.changed:
                    await self.changed.wait_for(lambda: v.inflight == 0 and v.reserved == 0)
                await self._unload_one(v, "evicted")
            await self._set(m, "loading")
            t0 = time.monotonic()
            try:
                await self._load(name)
            except Exception as exc:  # the waiters get it in one line; a later request retries
                log.error("model %s failed to load: %s", name, exc)
                m.failures += 1
                m.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                await self._set(m, "unloaded")
                return
            m.last_used = time.monotonic()
            self.events.loaded(name, cause, m.last_used - t0)
            log.info("model %s loaded (%s) in %.2f s%s", name, cause, m.last_used - t0,
                     f", evicting {', '.join(v.name for v in victims)}" if victims else "")
            async with self.changed:
                m.state, m.reserved = "loaded", m.waiting
                self.changed.notify_all()

    async def _unload_one(self, m: Resident, reason: str) -> None:
        await self._set(m, "unloading")
        try:
            await self._unload(m.name)
        finally:
            m.draining = False
            self.events.unloaded(m.name, reason)
            await self._set(m, "unloaded")

    async def _set(self, m: Resident, state: str) -> None:
        async with self.changed:
            m.state = state
            self.changed.notify_all()

    async def load_pinned(self) -> None:
        """The pinned models, loaded at start (a failure is serve's failure to start)."""
        for m in self.models.values():
            if m.pin:
                await self._swap_in(m.name, "start")
                if m.state != "loaded":
                    raise EngineUnavailable(f"pinned model {m.name} failed to load: {m.error}")

    async def expire_idle(self) -> None:
        """Unload on-demand models idle for their ttl (background job)."""
        while True:
            await asyncio.sleep(TTL_EVERY_S)
            now = time.monotonic()
            for m in self.models.values():
                if m.ttl is None or m.pin or m.state != "loaded" or m.busy \
                        or now - m.last_used < m.ttl:
                    continue
                async with self.swap_lock:
                    if m.state == "loaded" and not m.busy and not m.draining:
                        log.info("model %s idle for %.0f s (ttl): unloading", m.name,
                                 now - m.last_used)
                        await self._unload_one(m, "idle")

    async def unload_now(self, name: str, reason: str) -> bool:
        """Unload `name` at once when it is loaded, unpinned and idle (Ollama's keep_alive 0);
        False when it is not (its ttl then unloads it once idle)."""
        m = self.models[name]
        async with self.swap_lock:
            if m.state != "loaded" or m.pin or m.busy or m.draining:
                return False
            log.info("model %s unloaded (%s)", name, reason)
            await self._unload_one(m, reason)
            return True

    async def unload_all(self) -> None:
        for task in list(self._loads.values()):
            task.cancel()
        for m in self.models.values():
            if m.state != "unloaded":
                await self._unload_one(m, "stop")


class ResidencyEvents:
    """What the residency reports (serve/pool/team.py counts it in /metrics)."""

    def loaded(self, name: str, cause: str, seconds: float) -> None: ...

    def unloaded(self, name: str, reason: str) -> None: ...

    def waited(self, name: str) -> None: ...
