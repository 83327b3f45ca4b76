"""serve/pool/residency.py on its own, with loads that only take time: eviction of the least recently
used unpinned model (never a pinned one, never one with requests in flight), grouping by model
within the wait, refusal of a model that can never fit, failed loads, ttl."""

from __future__ import annotations

import asyncio
import time

import pytest

from edgepick.serve.errors import EngineUnavailable, ResourceRefused
from edgepick.serve.pool.residency import Resident, Residency, ResidencyEvents


class Log(ResidencyEvents):
    def __init__(self) -> None:
        self.loads: list[str] = []
        self.unloads: list[tuple[str, str]] = []
        self.waits = 0

    def loaded(self, name, cause, seconds):
        self.loads.append(name)

    def unloaded(self, name, reason):
        self.unloads.append((name, reason))

    def waited(self, name):
        self.waits += 1


def residency(needs: dict[str, int], budget: int | None, *, pinned=(), group_wait=0.0,
              ttl=None, fail=()) -> tuple[Residency, Log]:
    log = Log()

    async def load(name):
        await asyncio.sleep(0.01)
        if name in fail:
            raise RuntimeError(f"{name} will not start\nsecond line")

    async def unload(name):
        await asyncio.sleep(0.005)

    models = [Resident(n, need, pin=n in pinned, ttl=ttl) for n, need in needs.items()]
    return Residency(models, budget, load, unload, group_wait, log), log


async def use(res: Residency, name: str, hold: float = 0.0) -> None:
    await res.acquire(name, time.monotonic() + 10)
    try:
        await asyncio.sleep(hold)
    finally:
        await res.release(name)


def test_lru_unpinned_idle_model_is_evicted():
    async def main():
        res, log = residency({"p": 100, "a": 100, "b": 100, "c": 100}, 300, pinned=("p",))
        await res.load_pinned()
        await use(res, "a")
        await use(res, "b")
        await use(res, "a")  # b is now the least recently used
        await use(res, "c")
        assert log.unloads == [("b", "evicted")] and log.loads == ["p", "a", "b", "c"]
        assert {n for n, m in res.models.items() if m.state == "loaded"} == {"p", "a", "c"}
    asyncio.run(main())


def test_a_model_in_flight_drains_before_it_is_evicted():
    async def main():
        res, log = residency({"a": 100, "b": 100}, 150)
        busy = asyncio.create_task(use(res, "a", hold=0.2))
        await asyncio.sleep(0.05)
        t0 = time.monotonic()
        await use(res, "b")  # no group wait: forces the swap, which waits for a's answer
        assert busy.done() and time.monotonic() - t0 >= 0.1
        assert log.unloads == [("a", "evicted")]
    asyncio.run(main())


def test_requests_are_grouped_by_model_within_the_wait():
    async def main():
        res, log = residency({"a": 100, "b": 100}, 150, group_wait=1.0)
        await use(res, "a")
        # a stream of a-requests keeps a busy; b-requests wait for it, and one swap serves them
        jobs = [use(res, n, hold=0.05) for n in ["a", "b"] * 5]
        await asyncio.gather(*jobs)
        assert log.loads == ["a", "b"] and log.waits == 1 + 5
    asyncio.run(main())


def test_the_wait_is_bounded_by_group_wait():
    async def main():
        res, log = residency({"a": 100, "b": 100}, 150, group_wait=0.1)
        long = asyncio.create_task(use(res, "a", hold=0.5))
        await asyncio.sleep(0.01)
        t0 = time.monotonic()
        waiting = asyncio.create_task(use(res, "b"))
        await asyncio.sleep(0.05)
        assert res.models["a"].draining is False  # still within the wait
        await asyncio.sleep(0.1)
        assert res.models["a"].draining is True  # past it: a takes no new work, then goes
        await asyncio.gather(long, waiting)
        assert log.loads == ["a", "b"] and time.monotonic() - t0 < 1.0
    asyncio.run(main())


def test_a_model_that_never_fits_and_a_failed_load_are_one_line():
    async def main():
        res, _ = residency({"p": 100, "big": 100}, 150, pinned=("p",))
        await res.load_pinned()
        with pytest.raises(ResourceRefused) as exc:
            await use(res, "big")
        assert exc.value.message.startswith("model big needs") and "\n" not in exc.value.message
        assert "exceeds the memory budget" in exc.value.message
        res, _ = residency({"a": 10}, None, fail=("a",))
        with pytest.raises(EngineUnavailable) as exc:
            await use(res, "a")
        assert exc.value.message == "model a failed to load: a will not start"
    asyncio.run(main())


def test_an_idle_model_unloads_after_its_ttl(monkeypatch):
    from edgepick.serve.pool import residency as mod

    monkeypatch.setattr(mod, "TTL_EVERY_S", 0.02)

    async def main():
        res, log = residency({"a": 10}, None, ttl=0.05)
        await use(res, "a")
        job = asyncio.create_task(res.expire_idle())
        await asyncio.sleep(0.2)
        job.cancel()
        assert log.unloads == [("a", "idle")] and res.models["a"].state == "unloaded"
    asyncio.run(main())


def test_a_swap_serves_its_whole_batch_even_when_the_next_swap_is_queued():
    async def main():
        res, log = residency({"a": 100, "b": 100}, 150, group_wait=0.0)
        # both unloaded, both wanted at once, no group wait: each load serves all its waiters
        await asyncio.gather(*[use(res, n, hold=0.02) for n in ["a", "b"] * 3])
        assert sorted(log.loads) == ["a", "b"] and log.waits == 6
    asyncio.run(main())
