"""The local engine pool: admission, the active llama-server, liveness, restart and switch
without losing queued requests (seed 000 §4.3, §5.2-5.3; seed 001 §6.4).

Contract for routers (see serve/router_api.py): `await pool.forward(kind, body, stream, deadline)`
returns a `ServedResponse` or raises `Overloaded` (429, at once), `BadRequest` (400: `n` above the
slots), `ResourceRefused` (503), `DeadlineExceeded` (504), `EngineUnavailable` (503, retriable) or
`UpstreamError` (the engine's own status). `body` is the request's typed model the app checked (or
a router's own body dict, checked into it here); it is written as JSON once, when it is sent to
the engine, with `model` set to the served name. A streaming response must be `aclose()`d; that
frees the slots and, by closing the connection to llama-server, cancels the generation.

`switch_to(spec)` starts the new engine beside the old one and switches once it is healthy
(in-flight requests finish on the old one); `restart(reason)` stops the engine first (to give
its memory back) while admitted requests wait for the new one within their deadlines. Restarts
are budgeted: more than `max_restarts` within `restart_window_s` and the pool stops restarting
and reports itself degraded, so no fault makes it restart forever.

Liveness: the active engine is probed every second; one that does not answer within
`probe_timeout_s` reads *not ready* (`/health` 503, `edgepick_ready` 0) and gets no new work,
and one silent for `hung_after_s` is restarted (`edgepick_engine_restarts_total{reason="hung"}`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Awaitable, Callable

from edgepick.backends import llama_server_client as lsc
from edgepick.serve.engine.llama_server import LlamaServer
from edgepick.serve.engine.process import EngineProcess, EngineSpec
from edgepick.serve.engine.queries import EngineQueries
from edgepick.serve.engine.send import relay_error, send, sse_error  # noqa: F401 (re-export)
from edgepick.serve.engine.supervisor import Supervised
from edgepick.serve.metrics import ServeMetrics
from edgepick.serve.pool.admission import (Admission, Held, ResourceCheck, ResourcePolicy,
                                      slots_needed)
from edgepick.serve.pool.collect import collect
from edgepick.serve.pool.forwarded import engine_payload
from edgepick.serve.pool.scoring import EchoLimits, score_request
from edgepick.serve.pool.tool_choice import forced_functions, forward_forced
from edgepick.serve.request_models import OpenAIRequest, value
from edgepick.serve.router_api import DeadlineExceeded, Kind, ServedResponse
from edgepick.serve.validation import as_request

log = logging.getLogger("edgepick.serve")

ENGINE_NOTICE_S = 5.0  # longest a cancelled non-streaming request's slot is held for the engine
PATHS: dict[str, str] = {"chat": "/v1/chat/completions", "completion": "/v1/completions",
                         "embedding": "/v1/embeddings"}


class EdgePool(Supervised, EngineQueries):
    def __init__(self, spec: EngineSpec, *, queue: int, metrics: ServeMetrics | None = None,
                 resources: ResourcePolicy | None = None, drain_timeout_s: float = 30.0,
                 log_dir: str | None = None,
                 engine_factory: Callable[[EngineSpec], EngineProcess] | None = None,
                 probe_timeout_s: float = 5.0, hung_after_s: float = 30.0,
                 max_restarts: int = 3, restart_window_s: float = 600.0,
                 embeddings: EngineSpec | None = None, role: str = "chat",
                 echo_limits: EchoLimits | None = None) -> None:
        self.spec = spec
        # "chat" owns the engine gauges; "embedding" is the second engine (/v1/embeddings),
        # locked, probed, restarted and budgeted the same way, counted under its own reasons
        self.role = role
        self.metrics = metrics or ServeMetrics()
        self.admission = Admission(spec.slots, queue)
        self.resources = ResourceCheck(resources or ResourcePolicy())
        self.drain_timeout_s = drain_timeout_s
        self.probe_timeout_s = probe_timeout_s
        self.hung_after_s = hung_after_s
        self.max_restarts = max_restarts
        self.restart_window_s = restart_window_s
        self.engine: EngineProcess | None = None
        self.last_memory = 0
        self.status = "loading"  # loading, ready, unresponsive, restarting, degraded, failed
        self.degraded: str | None = None  # why the pool stopped restarting, once it has
        self.scorer = None  # prompt log-probabilities for echo (serve/pool/scoring.py), on demand
        self.echo_limits = echo_limits or EchoLimits()
        # run on a first or switched-to engine once healthy, before it serves; raising refuses it
        self.start_checks: list[Callable[[EngineProcess], None]] = []
        self._factory = engine_factory or (lambda s: LlamaServer(s, log_dir))
        self._ready = asyncio.Event()
        self._switch_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task] = []
        self._restarts: deque[float] = deque()
        self._last_answer = time.monotonic()  # the active engine's last answer to a probe
        self._tails: set[asyncio.Task] = set()  # slots held until the engine lets go
        self._progress: tuple[int | None, float] = (None, time.monotonic())  # decodes, since
        self.on_switch: list[Callable[[EngineSpec], Awaitable[None] | None]] = []
        self.embedder: EdgePool | None = None
        if embeddings is not None:
            self.embedder = EdgePool(embeddings, queue=queue, metrics=self.metrics,
                                     resources=resources, drain_timeout_s=drain_timeout_s,
                                     log_dir=log_dir, engine_factory=engine_factory,
                                     probe_timeout_s=probe_timeout_s, hung_after_s=hung_after_s,
                                     max_restarts=max_restarts,
                                     restart_window_s=restart_window_s, role="embedding")
        if role == "chat":
            m = self.metrics
            m.slots.set(spec.slots)
            m.bind_pool(lambda: self.admission.waiting, lambda: self.admission.busy,
                        lambda: self.last_memory)

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def health(self) -> dict:
        """Readiness with its reason: {"ready": bool, "status": ..., "detail"?: ...}."""
        out: dict = {"ready": self.ready, "status": self.status}
        if self.degraded:
            out["detail"] = self.degraded
        if self.embedder is not None:
            out["embeddings"] = self.embedder.health()
        return out

    async def start(self) -> None:
        if self.embedder is not None:  # first, so /health's 200 means both engines serve
            await self.embedder.start()
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
        if self.scorer is not None:
            await self.scorer.aclose()
        if self.embedder is not None:
            await self.embedder.aclose()

    async def _ready_engine(self, deadline: float | None = None) -> EngineProcess:
        """The serving engine. Without a deadline (tokenizer, props) not ready is a 503 at once;
        a request admitted before a restart waits for the new engine within its deadline,
        unless serve fails meanwhile."""
        if deadline is None:
            self._refuse_unless_ready()
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

    # -- the request path --------------------------------------------------------------------
    async def forward(self, kind: Kind, body: OpenAIRequest | dict, stream: bool, deadline: float,
                      forced: bool = True) -> ServedResponse:
        if kind == "completion" and value(body, "echo"):
            return await score_request(self, body, stream, deadline)
        self._refuse_unless_ready()
        request = as_request(kind, body)
        functions = forced_functions(request) if kind == "chat" and forced else None
        if functions:  # a tool call required: enforced, as the engine may ignore it
            return await forward_forced(self, request, stream, deadline, functions)
        n = slots_needed(request)
        self.admission.check_size(value(request, "n") or 1)  # `n` itself must fit (the schema)
        # several prompts (or inputs) beyond the slots take the whole engine, which runs them
        # in turn within this one request: nothing of another request waits unseen inside it
        n = min(n, self.admission.slots)
        request, degraded = self.resources.apply(request)
        self.admission.enter(n)
        wait_s = await self.admission.acquire(deadline, n)
        held_from = time.monotonic()
        engine: EngineProcess | None = None
        sent = False

        def release() -> None:
            if engine is not None:
                engine.end()
            self.admission.release(time.monotonic() - held_from, n)

        # generation always streams from the engine: a non-streaming answer is rebuilt from
        # the stream (serve/pool/collect.py), so a client that leaves stops the engine at once
        # (llama-server refuses logprobs with tools on a stream: such a request is not streamed)
        streamed = kind != "embedding" and (stream or not (
            kind == "chat" and request.tools and request.logprobs))
        try:
            engine = await self._ready_engine(deadline)
            engine.begin()
            self.metrics.queue_wait.observe(wait_s)
            headers = {"x-edgepick-model-version": f"{engine.spec.name}@{engine.spec.version}",
                       "x-edgepick-model": engine.spec.name}  # as a team's answers say it
            if degraded:
                headers["x-edgepick-degraded"] = degraded
                self.metrics.degraded.inc()
            req = engine.client.build_request(
                "POST", PATHS[kind], json=engine_payload(request, engine.spec.name, streamed))
            sent = True
            resp = await send(engine, req, deadline, streamed)
            if not stream:
                try:
                    data = await collect(resp, kind, deadline) if streamed else resp.json()
                finally:
                    await resp.aclose()
        except (asyncio.CancelledError, DeadlineExceeded):
            if sent:  # the engine lets go at its next token: the slots are held until then
                self._release_after_tail(engine, release, n)
            else:
                release()
            raise
        except BaseException:
            release()
            raise
        if not stream:
            release()
            return ServedResponse(body=data, headers=headers, queue_wait_s=wait_s)
        chunks = lsc.relay(resp.aiter_raw(), deadline, relay_error)

        async def close() -> None:
            try:
                await chunks.aclose()
                await resp.aclose()
            finally:
                release()

        return ServedResponse(chunks=chunks, headers=headers, queue_wait_s=wait_s, _closer=close)

    def _release_after_tail(self, engine: EngineProcess, release: Callable[[], None],
                            n: int) -> None:
        """Release a request's slots once the engine has let go of it, not when its client left
        or its deadline passed: the engine ends the task at its next token write (the request
        streams from it, serve/pool/collect.py) and frees the slot at its next loop turn. Until then
        the slot is busy, and a request admitted into it would wait inside the engine unseen.
        Bounded by ENGINE_NOTICE_S; the engine's own counters (its
        /metrics) say when it is done."""

        async def hold() -> None:
            try:
                end = time.monotonic() + ENGINE_NOTICE_S
                while time.monotonic() < end and engine.alive and not engine.stopping:
                    use = await engine.loop_state(1.0)
                    if use is None or use["processing"] + max(use["deferred"], 0) \
                            <= self.admission.busy - n:
                        break
                    await asyncio.sleep(0.05)
            finally:
                release()

        task = asyncio.create_task(hold())
        self._tails.add(task)
        task.add_done_callback(self._tails.discard)

    def admitted(self, deadline: float, n: int = 1) -> Held:
        """`async with pool.admitted(deadline)`: an admission place and `n` slots for work the
        pool runs itself (prompt scoring), under the same bounds as any request."""
        return Held(self.admission, deadline, n)
