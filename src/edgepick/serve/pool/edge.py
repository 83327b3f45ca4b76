"""The local engine pool: admission, the active llama-server, liveness, restart and switch
without losing queued requests (seed 000 §4.3, §5.2-5.3; seed 001 §6.4).

Contract for routers (see serve/router_api.py): `await pool.forward(kind, body, stream, deadline)`
returns a `ServedResponse` or raises `Overloaded` (429, at once), `BadRequest` (400: `n` above the
slots), `ResourceRefused` (503), `DeadlineExceeded` (504), `EngineUnavailable` (503, retriable) or
`UpstreamError` (the engine's own status). `body` is the request's typed model the app checked (or
a router's own body dict, checked into it here); it is written as JSON once, when it is sent to
the engine, with `model` set to the served name. A streaming response must be `aclose()`d; that
frees the slots and, by closing the connection to llama-server, cancels the generation.

The engine itself is its supervisor's (serve/engine/supervisor.py), which the pool owns:
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
from typing import Any, Callable

from edgepick.backends import llama_server_client as lsc
from edgepick.serve.engine.llama_server import LlamaServer
from edgepick.serve.engine.process import EngineProcess, EngineSpec
from edgepick.serve.engine.queries import EngineQueries
from edgepick.serve.engine.send import relay_error, send
from edgepick.serve.engine.supervisor import EngineSupervisor
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


def _supervisors(name: str, writable: bool = False) -> property:
    """An attribute of the pool's engine that its supervisor holds, read (and, for the memory
    watchdog's, written) through the pool."""

    def get(self: EdgePool) -> Any:
        return getattr(self.supervisor, name)

    def put(self: EdgePool, value: Any) -> None:
        setattr(self.supervisor, name, value)

    return property(get, put if writable else None)


class EdgePool:
    """One model's engine behind bounded admission: its supervisor (serve/engine/supervisor.py)
    keeps the engine serving, its queries (serve/engine/queries.py) ask it what is not
    generation, and the pool admits and forwards requests to it."""

    def __init__(self, spec: EngineSpec, *, queue: int, metrics: ServeMetrics | None = None,
                 resources: ResourcePolicy | None = None, drain_timeout_s: float = 30.0,
                 log_dir: str | None = None,
                 engine_factory: Callable[[EngineSpec], EngineProcess] | None = None,
                 probe_timeout_s: float = 5.0, hung_after_s: float = 30.0,
                 max_restarts: int = 3, restart_window_s: float = 600.0,
                 embeddings: EngineSpec | None = None, role: str = "chat",
                 echo_limits: EchoLimits | None = None) -> None:
        self.metrics = metrics or ServeMetrics()
        # "chat" owns the engine gauges; "embedding" is the second engine (/v1/embeddings),
        # locked, probed, restarted and budgeted the same way, counted under its own reasons
        self.supervisor = EngineSupervisor(
            spec, engine_factory or (lambda s: LlamaServer(s, log_dir)), self.metrics,
            role=role, drain_timeout_s=drain_timeout_s, probe_timeout_s=probe_timeout_s,
            hung_after_s=hung_after_s, max_restarts=max_restarts,
            restart_window_s=restart_window_s)
        self.queries = EngineQueries(self.supervisor)
        self.admission = Admission(spec.slots, queue)
        self.resources = ResourceCheck(resources or ResourcePolicy())
        self.scorer = None  # prompt log-probabilities for echo (serve/pool/scoring.py), on demand
        self.echo_limits = echo_limits or EchoLimits()
        self._tails: set[asyncio.Task] = set()  # slots held until the engine lets go
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
                        lambda: self.supervisor.last_memory)

    # -- the engine, as its supervisor keeps it ------------------------------------------------
    spec = _supervisors("spec")
    engine = _supervisors("engine")
    status = _supervisors("status")
    degraded = _supervisors("degraded")
    role = _supervisors("role")
    start_checks = _supervisors("start_checks")
    on_switch = _supervisors("on_switch")
    last_memory = _supervisors("last_memory", writable=True)  # the watchdog's last sample
    memory_abort = _supervisors("memory_abort", writable=True)  # the watchdog's ceiling

    @property
    def ready(self) -> bool:
        return self.supervisor.ready

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
        await self.supervisor.start()

    async def aclose(self) -> None:
        await self.supervisor.aclose()
        if self.scorer is not None:
            await self.scorer.aclose()
        if self.embedder is not None:
            await self.embedder.aclose()

    async def restart(self, reason: str, *, drain: bool = True,
                      abort: Callable[[], bool] | None = None) -> bool:
        return await self.supervisor.restart(reason, drain=drain, abort=abort)

    async def switch_to(self, spec: EngineSpec, cause: str) -> None:
        await self.supervisor.switch_to(spec, cause)

    # -- what is asked of the engine besides generation --------------------------------------
    async def count_tokens(self, text: str) -> int:
        return await self.queries.count_tokens(text)

    async def tokenize(self, text: str, add_special: bool = True,
                       parse_special: bool = True) -> list[int]:
        return await self.queries.tokenize(text, add_special, parse_special)

    async def detokenize(self, tokens: list[int]) -> str:
        return await self.queries.detokenize(tokens)

    async def props(self) -> dict:
        return await self.queries.props()

    @property
    def n_vocab(self) -> int | None:
        return self.queries.n_vocab

    @property
    def embedding_width(self) -> int | None:
        return self.queries.embedding_width

    async def slot_use(self) -> dict:
        """edgepick's slot accounting beside the engine's own (its /metrics), read at once."""
        engine = await self.supervisor.ready_engine()
        busy, waiting = self.admission.busy, self.admission.waiting
        theirs = await self.queries.engine_slot_use(engine)
        return {"slots": self.admission.slots, "busy": busy, "waiting": waiting,
                "busy_after": self.admission.busy, "engine_processing": theirs["processing"],
                "engine_deferred": theirs["deferred"],
                "engine_tokens_predicted": theirs["tokens_predicted"]}

    # -- the request path --------------------------------------------------------------------
    async def forward(self, kind: Kind, body: OpenAIRequest | dict, stream: bool, deadline: float,
                      forced: bool = True) -> ServedResponse:
        if kind == "completion" and value(body, "echo"):
            return await score_request(self, body, stream, deadline)
        self.supervisor.refuse_unless_ready()
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
            engine = await self.supervisor.ready_engine(deadline)
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
