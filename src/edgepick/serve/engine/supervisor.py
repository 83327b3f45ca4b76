"""One engine child kept serving (serve/pool/edge.py's EdgePool owns one, and its embedding
engine another): started once its start checks pass, a child that dies is restarted, a child
that stops answering is marked not ready and, past `hung_after_s`, restarted, restarts are
budgeted, and a switch to another version starts it beside the serving one (seed 000 §5.3).

Liveness reads llama-server's two threads apart. Its HTTP thread answers `/health` by itself,
so a `/health` answer only says the process lives. Its `/metrics` is a task the main loop must
pick up (tools/server/server-context.cpp: `SERVER_TASK_TYPE_METRICS`, posted high priority; the
loop yields to the queue between decodes), so an answer there says the loop turns, and its
`llamacpp:n_decode_total` says whether the slots make progress. A loop wedged in one request
(the grammar bomb of docs/serve.md) answers `/health` and never `/metrics`: unresponsive, then
hung. A slot holding a request with no new decode for `hung_after_s` is hung as well.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Any, Awaitable, Callable

from edgepick.serve.engine.process import EngineProcess, EngineSpec
from edgepick.serve.errors import DeadlineExceeded, EngineUnavailable

log = logging.getLogger("edgepick.serve")
FAILED_RETRY_S = 60  # Retry-After once serve has stopped restarting its engine


class EngineSupervisor:
    """The serving engine's state (loading, ready, unresponsive, restarting, degraded, failed,
    stopped), its restarts and switches. `metrics` is serve's ServeMetrics; the "chat" role owns
    the engine gauges, another role (the embedding engine) counts restarts under its own
    reasons."""

    STOP_GRACE_S = 2.0  # SIGTERM, then SIGKILL: a wedged main loop never acts on SIGTERM

    def __init__(self, spec: EngineSpec, factory: Callable[[EngineSpec], EngineProcess],
                 metrics: Any, *, role: str = "chat", drain_timeout_s: float = 30.0,
                 probe_timeout_s: float = 5.0, hung_after_s: float = 30.0,
                 max_restarts: int = 3, restart_window_s: float = 600.0) -> None:
        self.spec = spec
        self.role = role
        self.metrics = metrics
        self.drain_timeout_s = drain_timeout_s
        self.probe_timeout_s = probe_timeout_s
        self.hung_after_s = hung_after_s
        self.max_restarts = max_restarts
        self.restart_window_s = restart_window_s
        self.engine: EngineProcess | None = None
        self.last_memory = 0
        self.status = "loading"  # loading, ready, unresponsive, restarting, degraded, failed
        self.degraded: str | None = None  # why it stopped restarting, once it has
        # run on a first or switched-to engine once healthy, before it serves; raising refuses it
        self.start_checks: list[Callable[[EngineProcess], None]] = []
        self.on_switch: list[Callable[[EngineSpec], Awaitable[None] | None]] = []
        self.memory_abort: Callable[[], bool] | None = None  # the memory watchdog's ceiling
        self._factory = factory
        self._ready = asyncio.Event()
        self._switch_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task] = []
        self._restarts: deque[float] = deque()
        self._last_answer = time.monotonic()  # the active engine's last answer to a probe
        self._progress: tuple[int | None, float] = (None, time.monotonic())  # decodes, since

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    async def start(self) -> None:
        engine = self._factory(self.spec)
        await engine.start()
        await self._checked(engine)
        self._activate(engine)
        self._tasks = [asyncio.create_task(self._supervise()),
                       asyncio.create_task(self._watch_liveness())]

    async def _checked(self, engine: EngineProcess) -> None:
        try:
            for check in self.start_checks:
                check(engine)
        except BaseException:
            await engine.stop()
            raise

    def _activate(self, engine: EngineProcess) -> None:
        self.engine = engine
        self.spec = engine.spec
        self.last_memory = engine.memory_bytes()
        if self.role == "chat":
            self.metrics.set_active(engine.spec.name, engine.spec.version)
        self._set_ready(True, "ready" if not self.degraded else "degraded")

    def _set_ready(self, ready: bool, status: str) -> None:
        self.status = status
        if ready:
            self._ready.set()
        else:
            self._ready.clear()
        if self.role == "chat":
            self.metrics.ready.set(1 if ready else 0)

    async def aclose(self) -> None:
        for t in self._tasks:
            t.cancel()
        self._set_ready(False, "stopped")
        if self.engine:
            await self.engine.stop()

    async def ready_engine(self, deadline: float | None = None) -> EngineProcess:
        """The serving engine. Without a deadline (tokenizer, props) not ready is a 503 at once;
        a request admitted before a restart waits for the new engine within its deadline,
        unless serve fails meanwhile."""
        if deadline is None:
            self.refuse_unless_ready()
        while not self.ready:
            if self.status == "failed":
                raise self._unavailable()
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeadlineExceeded("deadline passed while the engine was not ready")
            try:
                await asyncio.wait_for(self._ready.wait(), min(left, 0.2))
            except asyncio.TimeoutError:
                pass
        engine = self.engine
        assert engine is not None and engine.client is not None
        return engine

    def refuse_unless_ready(self) -> None:
        """A new request to an engine that is not serving is answered 503 at once (loading,
        restarting, unresponsive, failed), never queued behind it."""
        if not self.ready:
            raise self._unavailable()

    def _unavailable(self) -> EngineUnavailable:
        if self.status == "failed":
            return EngineUnavailable(f"the engine failed and is not restarted any more "
                                     f"({self.degraded or 'restart budget spent'}); see "
                                     "/health", retry_after=FAILED_RETRY_S)
        return EngineUnavailable(f"the engine is {self.status}; retry shortly", retry_after=2)

    async def _supervise(self) -> None:
        """A child that dies on its own is restarted (counted as a crash) while the restart
        budget lasts."""
        while True:
            engine = self.engine
            if engine is None or engine.proc is None or self.status == "failed":
                await asyncio.sleep(0.2)
                continue
            code = await engine.proc.wait()
            if engine is self.engine and not engine.stopping and self.status != "failed":
                # how it died (signal, OOM) is classified by serve/feedback.watch_engine
                log.error("engine %s@%s exited with code %s; restarting (last log lines: %s)",
                          engine.spec.name, engine.spec.version, code, engine.log_tail())
                await self.restart("crash", drain=False)
                continue
            await asyncio.sleep(0.2)

    async def _watch_liveness(self) -> None:
        """Probe the active engine every second: no answer within the probe timeout reads not
        ready; no answer for `hung_after_s` restarts it (reason "hung")."""
        every = min(1.0, self.probe_timeout_s)
        self._last_answer = time.monotonic()
        while True:
            await asyncio.sleep(every)
            try:
                await self._probe_once()
            except Exception:  # the watcher must outlive any one failed probe or restart
                log.exception("engine liveness probe")

    async def _probe_once(self) -> None:
        engine = self.engine
        if engine is None or engine.stopping or self.status not in ("ready", "degraded",
                                                                    "unresponsive"):
            self._last_answer = time.monotonic()
            self._progress = (None, time.monotonic())
            return
        ok = await engine.probe(self.probe_timeout_s)
        use = await engine.loop_state(self.probe_timeout_s) if ok else None
        if engine is not self.engine or engine.stopping:
            return
        now = time.monotonic()
        ok = use is not None
        if ok and self._stalled(use, now):
            log.error("engine %s@%s: a slot has held a request with no decode for %.0f s: "
                      "restarting it", engine.spec.name, engine.spec.version, self.hung_after_s)
            await self.restart("hung", drain=False)
            self._last_answer = time.monotonic()
            return
        if ok:
            self._last_answer = now
            if self.status == "unresponsive":
                log.warning("engine %s@%s answers again", engine.spec.name, engine.spec.version)
                self._set_ready(True, "degraded" if self.degraded else "ready")
            return
        if self.status != "unresponsive":
            log.error("engine %s@%s did not answer a health probe (or its main loop did not "
                      "answer /metrics) within %.1f s: not ready",
                      engine.spec.name, engine.spec.version, self.probe_timeout_s)
            self._set_ready(False, "unresponsive")
        if now - self._last_answer >= self.hung_after_s and engine.alive:
            log.error("engine %s@%s silent for %.0f s: restarting it", engine.spec.name,
                      engine.spec.version, now - self._last_answer)
            await self.restart("hung", drain=False)
            self._last_answer = time.monotonic()

    def _stalled(self, use: dict, now: float) -> bool:
        """True when a slot has held a request and the decode count has not moved for
        `hung_after_s` (the engine's own counters, read through its main loop)."""
        decodes, since = self._progress
        if use.get("processing", 0) <= 0 or use.get("decodes") != decodes:
            self._progress = (use.get("decodes"), now)
            return False
        return now - since >= self.hung_after_s

    def _may_restart(self, reason: str) -> bool:
        """Spend one restart of the budget, or refuse (and report degraded) when it is gone."""
        now = time.monotonic()
        while self._restarts and now - self._restarts[0] > self.restart_window_s:
            self._restarts.popleft()
        if len(self._restarts) >= self.max_restarts:
            if self.degraded is None:
                self.degraded = (f"{len(self._restarts)} engine restarts within "
                                 f"{self.restart_window_s:.0f} s (the last for {reason}): no "
                                 "more restarts")
                log.error("%s; serving on as it is", self.degraded)
            return False
        self._restarts.append(now)
        return True

    async def restart(self, reason: str, *, drain: bool = True,
                      abort: Callable[[], bool] | None = None) -> bool:
        """Stop the engine (after a drain) and start it again; queued requests wait. `abort()`
        true cuts the drain and the SIGTERM grace short (memory still climbing). False when the
        restart budget is spent: the engine is left as it is (a dead one: failed), unless it is
        hung or over its memory limit, which is stopped all the same and leaves serve failed:
        the watchdog always wins."""
        abort = abort or self.memory_abort
        async with self._switch_lock:
            if not self._may_restart(reason):
                old = self.engine
                if old is not None and old.alive and reason in ("hung", "memory"):
                    log.error("engine %s and no restart left: stopped; serve answers 503",
                              reason)
                    await old.stop(self.STOP_GRACE_S, abort)
                if old is None or not old.alive:
                    self._set_ready(False, "failed")
                elif self.ready:
                    self.status = "degraded"
                return False
            old = self.engine
            self._set_ready(False, "restarting")
            self.metrics.restarts.labels(reason if self.role == "chat"
                                         else f"{self.role}_{reason}").inc()
            self.metrics.events.append((time.time(), "restart", f"{self.spec.name}: {reason}"))
            if old is not None:
                if drain and not await old.drain(self.drain_timeout_s, abort):
                    log.warning("drain ended with %d request(s) in flight; they get a "
                                "retriable 503", old.inflight)
                await old.stop(self.STOP_GRACE_S, abort)
            log.warning("engine restart (%s): %s@%s", reason, self.spec.name, self.spec.version)
            delay = 1.0
            while True:
                engine = self._factory(self.spec)
                try:  # no start checks: the engine already passed them once
                    await engine.start()
                    break
                except Exception as exc:  # keep admitted requests waiting, retry the start
                    if not self._may_restart("failed start"):
                        log.error("engine restart failed: %s; giving up", exc)
                        self._set_ready(False, "failed")
                        return False
                    log.error("engine restart failed: %s; retrying in %.0f s", exc, delay)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 30.0)
            self._activate(engine)
            return True

    async def switch_to(self, spec: EngineSpec, cause: str) -> None:
        """Start `spec` beside the serving engine, switch when healthy, drain the old one.
        If the new engine fails to start, the old one keeps serving and the error propagates."""
        async with self._switch_lock:
            new = self._factory(spec)
            await new.start()
            await self._checked(new)
            old = self.engine
            self._activate(new)
            self.metrics.swaps.labels(cause, spec.version).inc()
            log.warning("switched to %s@%s (%s)", spec.name, spec.version, cause)
            for hook in self.on_switch:
                res = hook(spec)
                if asyncio.iscoroutine(res):
                    await res
        if old is not None:
            await old.drain(self.drain_timeout_s)
            await old.stop(self.STOP_GRACE_S)

