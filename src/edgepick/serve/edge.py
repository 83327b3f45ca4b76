"""The local engine pool: admission, the active llama-server, restart and switch without losing
queued requests (seed 000 §4.3, §5.2-5.3; seed 001 §6.4).

Contract for routers (see serve/router_api.py): `await pool.forward(kind, body, stream, deadline)`
returns a `ServedResponse` or raises `Overloaded` (429, at once), `ResourceRefused` (503),
`DeadlineExceeded` (504), `EngineUnavailable` (503, retriable) or `UpstreamError` (the engine's
own status). `body` is an OpenAI request body already checked by the app; the pool sets `model`
to the served name. A streaming response must be `aclose()`d; that frees the slot and, by
closing the connection to llama-server, cancels the generation.

`switch_to(spec)` starts the new engine beside the old one and switches once it is healthy
(in-flight requests finish on the old one); `restart(reason)` stops the engine first (to give
its memory back) while admitted requests wait for the new one within their deadlines.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import AsyncIterator, Awaitable, Callable

import httpx

from edgepick.serve.admission import Admission, ResourceCheck, ResourcePolicy
from edgepick.serve.engine import Engine, EngineSpec
from edgepick.serve.metrics import ServeMetrics
from edgepick.serve.router_api import (DeadlineExceeded, EngineUnavailable, Kind, ServedResponse,
                                       UpstreamError)

log = logging.getLogger("edgepick.serve")

PATHS: dict[str, str] = {"chat": "/v1/chat/completions", "completion": "/v1/completions"}


class EdgePool:
    def __init__(self, spec: EngineSpec, *, queue: int, metrics: ServeMetrics | None = None,
                 resources: ResourcePolicy | None = None, drain_timeout_s: float = 30.0,
                 log_dir: str | None = None,
                 engine_factory: Callable[[EngineSpec], Engine] | None = None) -> None:
        self.spec = spec
        self.metrics = metrics or ServeMetrics()
        self.admission = Admission(spec.slots, queue)
        self.resources = ResourceCheck(resources or ResourcePolicy())
        self.drain_timeout_s = drain_timeout_s
        self.engine: Engine | None = None
        self.last_memory = 0
        self._factory = engine_factory or (lambda s: Engine(s, log_dir))
        self._ready = asyncio.Event()
        self._switch_lock = asyncio.Lock()
        self._supervisor: asyncio.Task | None = None
        self.on_switch: list[Callable[[EngineSpec], Awaitable[None] | None]] = []
        m = self.metrics
        m.slots.set(spec.slots)
        m.bind_pool(lambda: self.admission.waiting, lambda: self.admission.busy,
                    lambda: self.last_memory)

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    async def start(self) -> None:
        engine = self._factory(self.spec)
        await engine.start()
        self._activate(engine)
        self._supervisor = asyncio.create_task(self._supervise())

    def _activate(self, engine: Engine) -> None:
        self.engine = engine
        self.spec = engine.spec
        self.last_memory = engine.memory_bytes()
        self.metrics.set_active(engine.spec.name, engine.spec.version)
        self.metrics.ready.set(1)
        self._ready.set()

    async def aclose(self) -> None:
        if self._supervisor:
            self._supervisor.cancel()
        self._ready.clear()
        self.metrics.ready.set(0)
        if self.engine:
            await self.engine.stop()

    async def _supervise(self) -> None:
        """A child that dies on its own is restarted (and counted as a crash)."""
        while True:
            engine = self.engine
            if engine is not None and engine.proc is not None:
                await engine.proc.wait()
                if engine is self.engine and not engine.stopping:
                    log.error("engine %s@%s exited with code %s; restarting (last log lines: "
                              "%s)", engine.spec.name, engine.spec.version,
                              engine.proc.returncode, engine.log_tail())
                    await self.restart("crash", drain=False)
                    continue
            await asyncio.sleep(0.2)

    async def restart(self, reason: str, *, drain: bool = True) -> None:
        """Stop the engine (after a drain) and start it again; queued requests wait."""
        async with self._switch_lock:
            old = self.engine
            self._ready.clear()
            self.metrics.ready.set(0)
            self.metrics.restarts.labels(reason).inc()
            if old is not None:
                if drain and not await old.drain(self.drain_timeout_s):
                    log.warning("drain timed out with %d request(s) in flight; they get a "
                                "retriable 503", old.inflight)
                await old.stop()
            log.warning("engine restart (%s): %s@%s", reason, self.spec.name, self.spec.version)
            engine = self._factory(self.spec)
            while True:
                try:
                    await engine.start()
                    break
                except Exception as exc:  # keep admitted requests failing fast, retry the start
                    log.error("engine restart failed: %s; retrying in 2 s", exc)
                    await asyncio.sleep(2)
                    engine = self._factory(self.spec)
            self._activate(engine)

    async def switch_to(self, spec: EngineSpec, cause: str) -> None:
        """Start `spec` beside the serving engine, switch when healthy, drain the old one.
        If the new engine fails to start, the old one keeps serving and the error propagates."""
        async with self._switch_lock:
            new = self._factory(spec)
            await new.start()
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
            await old.stop()

    async def count_tokens(self, text: str) -> int:
        """Tokens of `text` by the serving model's own tokenizer (llama-server's /tokenize)."""
        try:
            await asyncio.wait_for(self._ready.wait(), self.drain_timeout_s + 60)
        except asyncio.TimeoutError:
            raise EngineUnavailable("no engine ready", retry_after=5) from None
        engine = self.engine
        assert engine is not None and engine.client is not None
        try:
            resp = await engine.client.post("/tokenize", json={"content": text})
            resp.raise_for_status()
        except httpx.HTTPError as exc:
            raise EngineUnavailable(f"engine unavailable ({type(exc).__name__})",
                                    retry_after=2) from None
        return len(resp.json().get("tokens", []))

    # -- the request path --------------------------------------------------------------------
    async def forward(self, kind: Kind, body: dict, stream: bool, deadline: float) -> ServedResponse:
        body, degraded = self.resources.apply(body)
        self.admission.enter()
        wait_s = await self.admission.acquire(deadline)
        held_from = time.monotonic()
        engine: Engine | None = None

        def release() -> None:
            if engine is not None:
                engine.end()
            self.admission.release(time.monotonic() - held_from)

        try:
            try:
                await asyncio.wait_for(self._ready.wait(), max(deadline - time.monotonic(), 0))
            except asyncio.TimeoutError:
                raise DeadlineExceeded("deadline passed while the engine was restarting") from None
            engine = self.engine
            assert engine is not None and engine.client is not None
            engine.begin()
            self.metrics.queue_wait.observe(wait_s)
            payload = dict(body, model=engine.spec.name, stream=stream)
            if stream:
                payload["stream_options"] = {"include_usage": True}
            headers = {"x-edgepick-model-version": f"{engine.spec.name}@{engine.spec.version}"}
            if degraded:
                headers["x-edgepick-degraded"] = degraded
                self.metrics.degraded.inc()
            req = engine.client.build_request("POST", PATHS[kind], json=payload)
            resp = await self._send(engine, req, deadline, stream)
        except BaseException:
            release()
            raise
        if not stream:
            try:
                data = resp.json()
            finally:
                release()
            return ServedResponse(body=data, headers=headers, queue_wait_s=wait_s)
        chunks = _relay(resp, deadline)

        async def close() -> None:
            try:
                await chunks.aclose()
                await resp.aclose()
            finally:
                release()

        return ServedResponse(chunks=chunks, headers=headers, queue_wait_s=wait_s, _closer=close)

    async def _send(self, engine: Engine, req: httpx.Request, deadline: float,
                    stream: bool) -> httpx.Response:
        """The engine's response: open for a 200 stream, read in full otherwise."""
        assert engine.client is not None
        resp: httpx.Response | None = None
        keep = False
        try:
            async with asyncio.timeout_at(_loop_time(deadline)):
                try:
                    resp = await engine.client.send(req, stream=True)
                except httpx.RemoteProtocolError:
                    # a pooled connection the engine closed as we sent on it: nothing was
                    # answered, so once more on a fresh connection, unless the engine itself is
                    # gone (the supervisor then closes this client under us)
                    if engine.client.is_closed or not engine.alive:
                        raise
                    resp = await engine.client.send(req, stream=True)
                if stream and resp.status_code == 200:
                    keep = True
                else:
                    await resp.aread()
        except TimeoutError:
            raise DeadlineExceeded("deadline passed during generation") from None
        except httpx.HTTPError as exc:
            raise EngineUnavailable(f"engine connection lost ({type(exc).__name__}); "
                                    "it is restarting", retry_after=2) from None
        except RuntimeError:
            if not engine.client.is_closed:
                raise
            # the engine died and its client was closed while this request waited on it
            raise EngineUnavailable("engine connection lost; it is restarting",
                                    retry_after=2) from None
        finally:
            # a cancelled or failed read must not leave the connection (and the slot) busy
            if resp is not None and not keep:
                await resp.aclose()
        if resp.status_code != 200:
            try:
                payload = resp.json()
            except ValueError:
                payload = None
            message = _error_message(payload) or resp.text[:200]
            raise UpstreamError(f"engine: {message}", status=resp.status_code, payload=payload)
        return resp


def _loop_time(deadline: float) -> float:
    """asyncio's clock is time.monotonic on Linux, but convert explicitly to be safe."""
    loop = asyncio.get_running_loop()
    return loop.time() + (deadline - time.monotonic())


def _error_message(payload: object) -> str | None:
    if isinstance(payload, dict):
        err = payload.get("error")
        if isinstance(err, dict):
            return str(err.get("message"))
        if isinstance(err, str):
            return err
    return None


def sse_error(err: Exception, status: int) -> bytes:
    """The error event a stream ends with when it cannot finish (headers are already sent)."""
    payload = {"error": {"message": str(err), "code": status,
                         "type": getattr(err, "code", "server_error")}}
    return f"data: {json.dumps(payload)}\n\n".encode()


async def _relay(resp: httpx.Response, deadline: float) -> AsyncIterator[bytes]:
    """The engine's SSE bytes until [DONE], the deadline or a lost engine. The deadline guards
    each read only, never the consumer's own awaits between chunks."""
    it = resp.aiter_raw().__aiter__()
    at = _loop_time(deadline)
    while True:
        try:
            async with asyncio.timeout_at(at):
                chunk = await it.__anext__()
        except StopAsyncIteration:
            return
        except TimeoutError:
            yield sse_error(DeadlineExceeded("deadline passed during generation"), 504)
            return
        except httpx.HTTPError:
            yield sse_error(EngineUnavailable("engine connection lost; it is restarting"), 503)
            return
        yield chunk
