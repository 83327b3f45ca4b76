"""The local engine pool: admission, the active llama-server, liveness, restart and switch
without losing queued requests (seed 000 §4.3, §5.2-5.3; seed 001 §6.4).

Contract for routers (see serve/router_api.py): `await pool.forward(kind, body, stream, deadline)`
returns a `ServedResponse` or raises `Overloaded` (429, at once), `BadRequest` (400: `n` above the
slots), `ResourceRefused` (503), `DeadlineExceeded` (504), `EngineUnavailable` (503, retriable) or
`UpstreamError` (the engine's own status). `body` is an OpenAI request body already checked by the
app; the pool sets `model` to the served name. A streaming response must be `aclose()`d; that
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
from typing import AsyncIterator, Awaitable, Callable

import httpx

from edgepick.backends import llama_server_client as lsc
from edgepick.errors import EdgepickError
from edgepick.serve.admission import Admission, ResourceCheck, ResourcePolicy, slots_needed
from edgepick.serve.engine import Engine, EngineSpec
from edgepick.serve.errors import ServeError, sse_event
from edgepick.serve.metrics import ServeMetrics
from edgepick.serve.router_api import (BadRequest, DeadlineExceeded, EngineUnavailable, Kind,
                                       ServedResponse, UpstreamError)

log = logging.getLogger("edgepick.serve")

PATHS: dict[str, str] = {"chat": "/v1/chat/completions", "completion": "/v1/completions",
                         "embedding": "/v1/embeddings"}


class EdgePool:
    def __init__(self, spec: EngineSpec, *, queue: int, metrics: ServeMetrics | None = None,
                 resources: ResourcePolicy | None = None, drain_timeout_s: float = 30.0,
                 log_dir: str | None = None,
                 engine_factory: Callable[[EngineSpec], Engine] | None = None,
                 probe_timeout_s: float = 5.0, hung_after_s: float = 30.0,
                 max_restarts: int = 3, restart_window_s: float = 600.0,
                 embeddings: EngineSpec | None = None, role: str = "chat") -> None:
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
        self.engine: Engine | None = None
        self.last_memory = 0
        self.status = "loading"  # loading, ready, unresponsive, restarting, degraded, failed
        self.degraded: str | None = None  # why the pool stopped restarting, once it has
        self.scorer = None  # prompt log-probabilities for echo (serve/scoring.py), on demand
        # run on a first or switched-to engine once healthy, before it serves; raising refuses it
        self.start_checks: list[Callable[[Engine], None]] = []
        self._factory = engine_factory or (lambda s: Engine(s, log_dir))
        self._ready = asyncio.Event()
        self._switch_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task] = []
        self._restarts: deque[float] = deque()
        self._last_answer = time.monotonic()  # the active engine's last answer to a probe
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

    async def _checked(self, engine: Engine) -> None:
        try:
            for check in self.start_checks:
                check(engine)
        except BaseException:
            await engine.stop()
            raise

    def _activate(self, engine: Engine) -> None:
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
            return
        ok = await engine.probe(self.probe_timeout_s)
        if engine is not self.engine or engine.stopping:
            return
        now = time.monotonic()
        if ok:
            self._last_answer = now
            if self.status == "unresponsive":
                log.warning("engine %s@%s answers again", engine.spec.name, engine.spec.version)
                self._set_ready(True, "degraded" if self.degraded else "ready")
            return
        if self.status != "unresponsive":
            log.error("engine %s@%s did not answer a health probe within %.1f s: not ready",
                      engine.spec.name, engine.spec.version, self.probe_timeout_s)
            self._set_ready(False, "unresponsive")
        if now - self._last_answer >= self.hung_after_s and engine.alive:
            log.error("engine %s@%s silent for %.0f s: restarting it", engine.spec.name,
                      engine.spec.version, now - self._last_answer)
            await self.restart("hung", drain=False)
            self._last_answer = time.monotonic()

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

    async def restart(self, reason: str, *, drain: bool = True) -> bool:
        """Stop the engine (after a drain) and start it again; queued requests wait. False when
        the restart budget is spent: the engine is left as it is (a dead one: failed)."""
        async with self._switch_lock:
            if not self._may_restart(reason):
                old = self.engine
                if old is None or not old.alive:
                    self._set_ready(False, "failed")
                elif self.ready:
                    self.status = "degraded"
                return False
            old = self.engine
            self._set_ready(False, "restarting")
            self.metrics.restarts.labels(reason if self.role == "chat"
                                         else f"{self.role}_{reason}").inc()
            if old is not None:
                if drain and not await old.drain(self.drain_timeout_s):
                    log.warning("drain timed out with %d request(s) in flight; they get a "
                                "retriable 503", old.inflight)
                await old.stop()
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
            await old.stop()

    async def _ready_engine(self, deadline: float | None = None) -> Engine:
        timeout = self.drain_timeout_s + 60 if deadline is None else max(
            deadline - time.monotonic(), 0)
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except asyncio.TimeoutError:
            if deadline is not None:
                raise DeadlineExceeded("deadline passed while the engine was not ready") from None
            raise EngineUnavailable("no engine ready", retry_after=5) from None
        engine = self.engine
        assert engine is not None and engine.client is not None
        return engine

    async def count_tokens(self, text: str) -> int:
        """Tokens of `text` by the serving model's own tokenizer (llama-server's /tokenize)."""
        return len(await self.tokenize(text))

    async def tokenize(self, text: str, add_special: bool = True,
                       parse_special: bool = True) -> list[int]:
        engine = await self._ready_engine()
        try:
            return await lsc.atokenize(engine.client, text, add_special, parse_special)
        except (httpx.HTTPError, EdgepickError) as exc:
            raise EngineUnavailable(f"engine unavailable ({type(exc).__name__})",
                                    retry_after=2) from None

    async def detokenize(self, tokens: list[int]) -> str:
        engine = await self._ready_engine()
        try:
            # llama-server answers an id outside the vocabulary with a 500: the client's 400
            vocab = await self._vocab_size(engine)
            if vocab and any(t >= vocab for t in tokens):
                raise BadRequest(f"'tokens': ids must be below the vocabulary size {vocab}",
                                 param="tokens")
            return await lsc.adetokenize(engine.client, tokens)
        except (httpx.HTTPError, EdgepickError) as exc:
            raise EngineUnavailable(f"engine unavailable ({type(exc).__name__})",
                                    retry_after=2) from None

    async def _vocab_size(self, engine: Engine) -> int | None:
        """The served model's vocabulary size (llama-server's /v1/models `meta.n_vocab`), read
        once per engine."""
        if getattr(engine, "n_vocab", None) is None:
            r = await engine.client.get("/v1/models", timeout=10)
            lsc.check(r)
            data = (r.json().get("data") or [{}])[0]
            engine.n_vocab = (data.get("meta") or {}).get("n_vocab") or 0
        return engine.n_vocab

    async def props(self) -> dict:
        engine = await self._ready_engine()
        return await lsc.aprops(engine.client) or {}

    async def slot_use(self) -> dict:
        """edgepick's slot accounting beside the engine's own (its /metrics), read at once."""
        engine = await self._ready_engine()
        busy, waiting = self.admission.busy, self.admission.waiting
        try:
            theirs = await engine.slot_use()
        except (httpx.HTTPError, EdgepickError) as exc:
            raise EngineUnavailable(f"engine unavailable ({type(exc).__name__})",
                                    retry_after=2) from None
        return {"slots": self.admission.slots, "busy": busy, "waiting": waiting,
                "busy_after": self.admission.busy, "engine_processing": theirs["processing"],
                "engine_deferred": theirs["deferred"],
                "engine_tokens_predicted": theirs["tokens_predicted"]}

    # -- the request path --------------------------------------------------------------------
    async def forward(self, kind: Kind, body: dict, stream: bool, deadline: float) -> ServedResponse:
        if kind == "completion" and body.get("echo"):
            from edgepick.serve.scoring import score_request

            return await score_request(self, body, stream, deadline)
        n = slots_needed(body)
        if kind == "embedding":  # one slot per input, the whole engine for a longer list
            n = min(n, self.admission.slots)
        body, degraded = self.resources.apply(body)
        self.admission.enter(n)
        wait_s = await self.admission.acquire(deadline, n)
        held_from = time.monotonic()
        engine: Engine | None = None

        def release() -> None:
            if engine is not None:
                engine.end()
            self.admission.release(time.monotonic() - held_from, n)

        try:
            engine = await self._ready_engine(deadline)
            engine.begin()
            self.metrics.queue_wait.observe(wait_s)
            payload = dict(body, model=engine.spec.name)
            if kind != "embedding":
                payload["stream"] = stream
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
        chunks = lsc.relay(resp.aiter_raw(), deadline, _relay_error)

        async def close() -> None:
            try:
                await chunks.aclose()
                await resp.aclose()
            finally:
                release()

        return ServedResponse(chunks=chunks, headers=headers, queue_wait_s=wait_s, _closer=close)

    def admitted(self, deadline: float, n: int = 1) -> "_Held":
        """`async with pool.admitted(deadline)`: an admission place and `n` slots for work the
        pool runs itself (prompt scoring), under the same bounds as any request."""
        return _Held(self.admission, deadline, n)

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
            message = lsc.error_message(payload) or resp.text[:200]
            raise UpstreamError(f"engine: {message}", status=resp.status_code, payload=payload)
        return resp


class _Held:
    """`async with`: one admission place and `n` slots, released on exit."""

    def __init__(self, admission: Admission, deadline: float, n: int) -> None:
        self.admission, self.deadline, self.n = admission, deadline, n
        self.wait_s = 0.0

    async def __aenter__(self) -> "_Held":
        self.admission.enter(self.n)
        self.wait_s = await self.admission.acquire(self.deadline, self.n)
        self._t0 = time.monotonic()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.admission.release(time.monotonic() - self._t0, self.n)


def _loop_time(deadline: float) -> float:
    """asyncio's clock is time.monotonic on Linux, but convert explicitly to be safe."""
    loop = asyncio.get_running_loop()
    return loop.time() + (deadline - time.monotonic())


def sse_error(err: ServeError, status: int | None = None) -> bytes:
    """The error event a stream ends with when it cannot finish (headers are already sent):
    OpenAI's shape with the string code, plus the HTTP status it would have had."""
    if status is not None:
        err.status = status
    return sse_event(err)


def _relay_error(exc: BaseException) -> bytes:
    if isinstance(exc, TimeoutError):
        return sse_error(DeadlineExceeded("deadline passed during generation"))
    return sse_error(EngineUnavailable("engine connection lost; it is restarting"))
