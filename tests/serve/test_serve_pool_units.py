"""The pool's liveness and restart budget without an engine child: a fake engine that stops
answering its probe reads not ready, then is restarted as hung; restarts beyond the budget are
refused and reported; a memory limit under the footprint refuses the first engine."""

from __future__ import annotations

import asyncio

import pytest

from edgepick.errors import EdgepickError
from edgepick.serve.pool.edge import EdgePool
from edgepick.serve.engine.llama_server import EngineSpec
from edgepick.serve.engine.watchdog import MemoryWatchdog


class _Proc:
    def __init__(self) -> None:
        self.returncode = None
        self._done = asyncio.Event()

    async def wait(self) -> int:
        await self._done.wait()
        return self.returncode

    def exit(self, code: int) -> None:
        self.returncode = code
        self._done.set()


class FakeEngine:
    started = 0

    def __init__(self, spec: EngineSpec, memory: int = 10 << 20) -> None:
        self.spec, self.memory = spec, memory
        self.answers = True
        self.loop_answers = True  # False: /health answers, the main loop does not
        self.processing = 0
        self.decodes = 0
        self.stopping = False
        self.proc: _Proc | None = None
        self.inflight = 0
        self.pid = None

    async def start(self) -> None:
        FakeEngine.started += 1
        self.proc = _Proc()

    async def stop(self, grace_s: float = 5.0, abort=None) -> None:
        self.stopping = True
        if self.proc and self.proc.returncode is None:
            self.proc.exit(0)

    async def probe(self, timeout_s: float) -> bool:
        if not self.answers:
            await asyncio.sleep(timeout_s)
        return self.answers

    async def loop_state(self, timeout_s: float) -> dict | None:
        """The main loop's answer (llama-server's /metrics): None when it is wedged."""
        if not self.loop_answers:
            await asyncio.sleep(timeout_s)
            return None
        return {"processing": self.processing, "decodes": self.decodes, "deferred": 0}

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def memory_bytes(self) -> int:
        return self.memory

    def log_tail(self) -> str:
        return "(fake)"

    async def drain(self, timeout_s: float, abort=None) -> bool:
        return True


async def _until(check, timeout=10.0):
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.01)


def _metric(pool: EdgePool, name: str, **labels: str) -> float:
    return pool.metrics.registry.get_sample_value(name, labels) or 0.0


def _pool(**kw) -> EdgePool:
    spec = EngineSpec(path="/nonexistent.gguf", name="fake", slots=1)
    return EdgePool(spec, queue=1, engine_factory=FakeEngine, **kw)


async def _silenced(hung_after_s: float) -> EdgePool:
    """A started pool whose engine stopped answering, once it reads not ready."""
    pool = _pool(probe_timeout_s=0.05, hung_after_s=hung_after_s)
    await pool.start()
    pool.engine.answers = False
    await _until(lambda: pool.status == "unresponsive")
    assert not pool.ready and _metric(pool, "edgepick_ready") == 0
    return pool


def test_unanswered_probe_reads_not_ready_then_hung_restarts():
    async def main():
        pool = await _silenced(hung_after_s=0.5)
        first = pool.engine
        await _until(lambda: pool.engine is not first and pool.ready)
        assert _metric(pool, "edgepick_engine_restarts_total", reason="hung") == 1
        await pool.aclose()
    asyncio.run(main())


def test_a_probe_answered_again_is_ready_again_without_restart():
    async def main():
        pool = await _silenced(hung_after_s=60)
        pool.engine.answers = True
        await _until(lambda: pool.ready and pool.status == "ready")
        assert _metric(pool, "edgepick_engine_restarts_total", reason="hung") == 0
        await pool.aclose()
    asyncio.run(main())


def test_restarts_beyond_the_budget_are_refused_and_reported():
    async def main():
        pool = _pool(max_restarts=2, restart_window_s=600)
        await pool.start()
        assert await pool.restart("memory") and await pool.restart("memory")
        assert not await pool.restart("crash")  # a live engine past the budget: kept
        assert pool.status == "degraded" and pool.ready  # it keeps serving, and says so
        assert "no more restarts" in pool.health()["detail"]
        assert _metric(pool, "edgepick_engine_restarts_total", reason="memory") == 2
        # a crash after the budget is spent: not restarted, read failed
        pool.engine.proc.exit(-9)
        await _until(lambda: pool.status == "failed")
        assert not pool.ready
        await pool.aclose()
    asyncio.run(main())


def _wedge_loop(engine: FakeEngine) -> None:
    engine.loop_answers = False  # /health answers (the HTTP thread), /metrics not (the loop)


def _stall_slot(engine: FakeEngine) -> None:
    engine.processing = 1  # holds a request, and its decode count never moves


@pytest.mark.parametrize("fault", [_wedge_loop, _stall_slot])
def test_a_wedged_main_loop_or_a_stalled_slot_is_hung(fault):
    async def main():
        pool = _pool(probe_timeout_s=0.05, hung_after_s=0.5)
        await pool.start()
        first = pool.engine
        fault(first)
        await _until(lambda: pool.engine is not first and pool.ready)
        assert _metric(pool, "edgepick_engine_restarts_total", reason="hung") == 1
        await pool.aclose()
    asyncio.run(main())


def test_over_memory_or_hung_past_the_budget_stops_the_engine_and_fails_fast():
    async def main():
        from edgepick.serve.router_api import EngineUnavailable

        pool = _pool(max_restarts=1, restart_window_s=600)
        await pool.start()
        assert await pool.restart("memory")
        engine = pool.engine
        assert not await pool.restart("memory")  # the watchdog wins: stopped all the same
        assert engine.stopping and not engine.alive and pool.status == "failed"
        for call in (pool.forward("chat", {"messages": []}, False, 1e12), pool.tokenize("hi")):
            with pytest.raises(EngineUnavailable) as exc:
                await asyncio.wait_for(call, 1.0)  # at once, never after the deadline
            assert exc.value.retry_after and "failed" in exc.value.message
        await pool.aclose()
    asyncio.run(main())


def test_memory_limit_under_the_footprint_refuses_the_first_engine():
    async def main():
        pool = _pool()
        MemoryWatchdog(pool.supervisor, limit_bytes=1 << 20)
        with pytest.raises(EdgepickError) as exc:
            await pool.start()
        assert "below the engine's own footprint" in str(exc.value)
        assert not pool.ready
    asyncio.run(main())


def test_stop_kills_an_engine_that_ignores_sigterm_after_the_grace():
    """A main loop wedged in one request never acts on SIGTERM: SIGKILL follows."""
    import sys
    import time

    from edgepick.launch.process import AsyncChild
    from edgepick.serve.engine.llama_server import Engine

    async def main():
        engine = Engine(EngineSpec(path="/nonexistent.gguf", name="fake"))
        engine.proc = AsyncChild.start([sys.executable, "-c", "import signal, time; "
                                        "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                        "print('up', flush=True); time.sleep(60)"],
                                       stdout=__import__("subprocess").PIPE)
        engine.proc.popen.stdout.readline()  # SIGTERM is ignored from here on
        t0 = time.monotonic()
        await engine.stop(grace_s=0.3)
        assert engine.proc.returncode == -9 and time.monotonic() - t0 < 5
    asyncio.run(main())
