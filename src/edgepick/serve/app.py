"""The HTTP face of `edgepick serve`: OpenAI-compatible endpoints, `/health`, `/metrics`, and the
admin endpoints the registry CLI calls (seed 000 §4.3, §5.2-5.3, §7.4; seed 001 §6.4).

Handlers only check a request and hand it to the router (serve/router_api.py); they never know
which engine answers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager
from typing import Any, Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from edgepick.serve.request_checks import check_body, check_key, read_json
from edgepick.serve.edge import EdgePool
from edgepick.serve.relay import Outcome, measure_body, relay_stream
from edgepick.serve.router_api import (EdgeOnlyRouter, Kind, RouteRequest, Router, ServeError,
                                       UpstreamError)
from edgepick.serve.sampling import Sampler
from edgepick.serve.settings import ServeSettings

log = logging.getLogger("edgepick.serve")
ENDPOINTS: dict[Kind, str] = {"chat": "/v1/chat/completions", "completion": "/v1/completions"}


def error_response(err: ServeError) -> JSONResponse:
    payload: dict[str, Any] = {"error": {"message": err.message, "type": err.code,
                                         "code": err.status}}
    if isinstance(err, UpstreamError) and isinstance(err.payload, dict):
        payload = err.payload
    headers = {"Retry-After": str(max(1, round(err.retry_after)))} if err.retry_after else None
    return JSONResponse(payload, status_code=err.status, headers=headers)


class ServeState:
    """What the handlers share: the pool, the router, the settings, and background jobs."""

    def __init__(self, pool: EdgePool, settings: ServeSettings, router: Router | None = None,
                 sampler: Sampler | None = None,
                 background: list[Callable[[], Awaitable[None]]] | None = None,
                 admin: Any = None) -> None:
        self.pool = pool
        self.settings = settings
        self.router = router or EdgeOnlyRouter()
        self.sampler = sampler or Sampler(settings.sample_rate, settings.sample_out)
        self.background = background or []
        self.admin = admin  # registry controller (serve/control.py), when --registry is given
        self.metrics = pool.metrics
        self.start_error: Exception | None = None
        self.on_start_failed: Callable[[Exception], None] | None = None

    @property
    def max_prompt_tokens(self) -> int:
        if self.settings.max_prompt_tokens:
            return self.settings.max_prompt_tokens
        # A router that cuts long chats to the window or sends them to the cloud declares its
        # own limit (route/router.py); the edge-only default is what the engine can take.
        declared = getattr(self.router, "max_prompt_tokens", None)
        if declared:
            return declared
        n_ctx = self.pool.spec.runtime.n_ctx  # room for the answer, but never under half
        return n_ctx - min(self.settings.max_tokens, n_ctx // 2)


async def _until_disconnect(request: Request) -> None:
    # the body has been read, so the next ASGI message is the disconnect (or nothing at all)
    while (await request.receive())["type"] != "http.disconnect":
        pass


def create_app(state: ServeState) -> FastAPI:
    m = state.metrics

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        # the engine loads in the background so /health can answer 503 "loading" meanwhile
        tasks: list[asyncio.Task] = []

        async def start() -> None:
            try:
                await state.pool.start()
            except Exception as exc:
                state.start_error = exc
                log.error("engine failed to start: %s", exc)
                if state.on_start_failed:
                    state.on_start_failed(exc)
                return
            tasks.extend(asyncio.create_task(job()) for job in state.background)

        starter = asyncio.create_task(start())
        try:
            yield
        finally:
            starter.cancel()
            for t in tasks:
                t.cancel()
            await state.router.aclose()
            await state.pool.aclose()

    app = FastAPI(title="edgepick serve", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    # a refusal raised by any handler answers in the OpenAI error shape
    app.add_exception_handler(ServeError, lambda _request, err: error_response(err))

    def finish(kind: Kind, route: str, t0: float, req_body: dict, task: str | None,
               version: str, sampled: bool) -> Callable[[Outcome], None]:
        def done(out: Outcome) -> None:
            m.requests.labels(ENDPOINTS[kind], str(out.status)).inc()
            m.e2e.labels(route).observe(time.monotonic() - t0)
            if out.first_s is not None:
                m.ttft.labels(route).observe(out.first_s)
            for g in out.gaps:
                m.itl.labels(route).observe(g)
            if out.decode_tps:
                m.decode_tps.labels(route).observe(out.decode_tps)
            m.tokens.labels("prompt").inc(out.prompt_tokens)
            m.tokens.labels("completion").inc(out.completion_tokens)
            if sampled and out.status == 200:
                why, fmt = state.sampler.record(kind, req_body, "".join(out.text),
                                                out.finish_reason, task, version)
                m.sampled.labels("unacceptable" if why else "ok").inc()
                if fmt:
                    m.sampled_format_errors.inc()
        return done

    async def handle(request: Request, kind: Kind) -> Response:
        t0 = time.monotonic()
        s = state.settings
        try:
            check_key(request, s.api_key)
            raw = await read_json(request, s.max_body)
            stream = bool(raw.get("stream"))
            body = await check_body(kind, raw, max_tokens=s.max_tokens,
                                    max_prompt_tokens=state.max_prompt_tokens,
                                    count_tokens=state.pool.count_tokens)
            rr = RouteRequest(kind, body, stream, t0 + s.deadline,
                              {k.lower(): v for k, v in request.headers.items()})
            task = asyncio.create_task(state.router.route(rr, state.pool))
            # one step lets a refusal (429, 503) finish before a disconnect watcher is set up:
            # under overload most requests end here, and they must end fast
            await asyncio.sleep(0)
            if not task.done():
                gone = asyncio.create_task(_until_disconnect(request))
                await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
                gone.cancel()
                if not task.done():  # the client left: cancelling closes the engine connection
                    task.cancel()
                    m.requests.labels(ENDPOINTS[kind], "499").inc()
                    return Response(status_code=499)
            routed = task.result()
        except ServeError as err:
            if err.status == 429 or err.code == "insufficient_resources":
                m.rejections.labels(err.code).inc()
            m.requests.labels(ENDPOINTS[kind], str(err.status)).inc()
            return error_response(err)
        except Exception as exc:  # a bug must still answer, be counted and be logged
            log.exception("request failed")
            m.requests.labels(ENDPOINTS[kind], "500").inc()
            return error_response(ServeError(f"internal error ({type(exc).__name__})"))
        m.routes.labels(routed.route, routed.reason).inc()
        resp = routed.response
        headers = dict(resp.headers, **{"x-edgepick-route": routed.route,
                                        "x-edgepick-route-reason": routed.reason})
        version = headers.get("x-edgepick-model-version", "")
        sampled = state.sampler.take()
        done = finish(kind, routed.route, t0, body, request.headers.get("x-edgepick-task"),
                      version, sampled)
        if resp.chunks is not None:
            return StreamingResponse(relay_stream(resp, t0, sampled, done),
                                     media_type="text/event-stream", headers=headers)
        out = measure_body(resp.body or {}, t0, time.monotonic(), sampled)
        done(out)
        return JSONResponse(resp.body, status_code=resp.status, headers=headers)

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        return await handle(request, "chat")

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await handle(request, "completion")

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        check_key(request, state.settings.api_key)
        spec = state.pool.spec
        return JSONResponse({"object": "list", "data": [
            {"id": spec.name, "object": "model", "owned_by": "edgepick", "created": 0,
             "version": spec.version}]})

    @app.get("/health")
    async def health() -> Response:
        pool = state.pool
        if not pool.ready:
            return JSONResponse({"status": "loading"}, status_code=503,
                                headers={"Retry-After": "2"})
        return JSONResponse({"status": "ok", "model": pool.spec.name,
                             "version": pool.spec.version})

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        check_key(request, state.settings.api_key)
        return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)

    @app.post("/admin/models/{action}")
    async def admin(action: str, request: Request) -> Response:
        check_key(request, state.settings.api_key)
        if state.admin is None:
            raise ServeError("this server was started without --registry", status=404)
        raw = await read_json(request, state.settings.max_body)
        return JSONResponse(await state.admin.handle(action, raw))

    return app
