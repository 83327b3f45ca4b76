"""The HTTP face of `edgepick serve`: OpenAI-compatible endpoints, `/health`, `/metrics`, and the
admin endpoints the registry CLI calls (seed 000 §4.3, §5.2-5.3, §7.4; seed 001 §6.4).

Handlers only check a request and hand it to the router (serve/router_api.py); they never know
which engine answers. Every refusal, FastAPI's own 404/405/422 included, answers in OpenAI's
error shape (serve/errors.py); every answer carries `x-request-id` (serve/middleware.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager
from typing import Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from edgepick.serve.embeddings import answer as embedding_answer, embedding_body
from edgepick.serve.engine_api import engine_router
from edgepick.serve.feedback import loop_router
from edgepick.serve.errors import (ClientGone, EdgeOnlyUnavailable, NotFound,
                                   NotImplementedHere, ServeError, UpstreamError, from_upstream)
from edgepick.serve.middleware import REQUEST_ID, RequestGuard
from edgepick.serve.openapi_doc import describe, install
from edgepick.serve.refusals import OpenAICORS, error_response, install_refusals
from edgepick.serve.relay import Outcome, measure_body, relay_stream
from edgepick.serve.answer_models import NOT_READY
from edgepick.serve.forwarded import apply_sampling
from edgepick.serve.request_checks import check_body, check_key, read_json
from edgepick.serve.router_api import Edge, Kind, RouteRequest
from edgepick.serve.state import TASK_HEADER, ServeState, route, until_disconnect  # noqa: F401
from edgepick.serve.forced_routes import MockFailingEdge, forced_routes

log = logging.getLogger("edgepick.serve")
ENDPOINTS: dict[str, str] = {"chat": "/v1/chat/completions", "completion": "/v1/completions",
                             "embedding": "/v1/embeddings"}


def limits(state: ServeState) -> dict[str, int | None]:
    """This server's limits, for /openapi.json: what the schema allows is what it accepts."""
    pool = state.pool
    emb = getattr(pool, "embedder", None)
    echo = getattr(pool, "echo_limits", None)
    return {"max_tokens": state.settings.max_tokens, "slots": pool.spec.slots,
            "n_vocab": getattr(pool, "n_vocab", None),
            "embedding_vocab": getattr(emb, "n_vocab", None),
            "embedding_width": getattr(emb, "embedding_width", None),
            "max_prompt_tokens": state.max_prompt_tokens,
            "echo_max_prompt_tokens": getattr(echo, "max_prompt_tokens", None),
            "echo_max_prompts": getattr(echo, "max_prompts", None)}


def create_app(state: ServeState) -> FastAPI:
    m = state.metrics
    s = state.settings

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

    app = FastAPI(title="edgepick serve", version="1", lifespan=lifespan, docs_url=None,
                  redoc_url=None, openapi_url="/openapi.json")
    install(app, lambda: limits(state))
    app.state.serve_settings = s  # serve/run.py's server_config reads its HTTP settings
    app.include_router(engine_router(state))  # tokenizer, probes, engine slots (E)
    app.include_router(loop_router(state))  # feedback, metrics history (H, serve/feedback.py)

    install_refusals(app)  # every refusal in the OpenAI error shape (serve/refusals.py)

    if s.cors_origin:
        if "*" in s.cors_origin:
            log.warning("CORS: any origin may call this server from a browser (--cors-origin "
                        "'*'); the API key is still required")
        # preflights are answered here without the key (browsers never send it on them); the
        # call that follows still needs it
        app.add_middleware(OpenAICORS, allow_origins=list(s.cors_origin),
                           allow_methods=["GET", "POST", "OPTIONS"],
                           allow_headers=["authorization", "content-type", "x-api-key",
                                          REQUEST_ID, TASK_HEADER],
                           expose_headers=[REQUEST_ID, "x-edgepick-route",
                                           "x-edgepick-route-reason",
                                           "x-edgepick-model-version", "retry-after"],
                           max_age=600)
    app.add_middleware(RequestGuard)  # outermost: preflights and 431s get a request id too

    def refused(kind: str, err: ServeError) -> Response:
        """A refusal counted (endpoint and status; 429s and resource refusals by reason)."""
        if isinstance(err, UpstreamError):
            err = from_upstream(err)
        if err.status == 429 or err.code == "insufficient_resources":
            m.rejections.labels(err.label).inc()
        m.requests.labels(ENDPOINTS[kind], str(err.status)).inc()
        if isinstance(err, ClientGone):
            log.info("client gone: %s", err.message)
        return error_response(err)

    def finish(kind: Kind, route: str, t0: float, req_body: dict, task: str | None,
               version: str, sampled: bool, rid: str | None = None) -> Callable[[Outcome], None]:
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
            if out.status == 200 and out.prompt_tokens:  # the length drift check's input (H)
                m.prompt_tokens.observe(out.prompt_tokens)
                m.completion_tokens.observe(out.completion_tokens)
            if sampled and out.status == 200:
                why, fmt = state.sampler.record(kind, req_body, "".join(out.text),
                                                out.finish_reason, task, version, request_id=rid)
                m.sampled.labels("unacceptable" if why else "ok").inc()
                if fmt:
                    m.sampled_format_errors.inc()
        return done

    async def handle(request: Request, kind: Kind) -> Response:
        t0 = time.monotonic()
        rid = request.state.request_id
        try:
            check_key(request, s.api_key)
            raw = await read_json(request, s.max_body, s.body_timeout)
            body = await check_body(kind, raw, max_tokens=s.max_tokens,
                                    max_n=state.pool.spec.slots,
                                    n_vocab=getattr(state.pool, "n_vocab", None),
                                    max_prompt_tokens=state.max_prompt_tokens,
                                    count_tokens=state.pool.count_tokens)
            stream = body.get("stream") is True
            body, locked = apply_sampling(body, state.sampling, state.lock_sampling)
            rr = RouteRequest(kind, body, stream, t0 + s.deadline,
                              {k.lower(): v for k, v in request.headers.items()},
                              request_id=rid)
            rr.task = state.task_of(rr)
            edge: Edge = state.pool
            if state.test_headers:
                rr.paths, rr.failing = forced_routes(rr.headers)
                if "edge" in rr.failing:
                    edge = MockFailingEdge(state.pool)
            if state.offline or (rr.task is not None and rr.task in state.edge_only):
                if not rr.allows("edge"):
                    why = (f"task '{rr.task}' stays on this device (deploy.yaml edge_only_tasks)"
                           if rr.task in state.edge_only else "deploy.yaml says network: offline")
                    raise EdgeOnlyUnavailable(f"{why}; a forced route to the cloud is refused")
                rr.paths = ("edge",)
            task = asyncio.create_task(route(state, rr, edge))
            # one step lets a refusal (429, 503) finish before a disconnect watcher is set up:
            # under overload most requests end here, and they must end fast
            await asyncio.sleep(0)
            if not task.done():
                gone = asyncio.create_task(until_disconnect(request))
                await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
                gone.cancel()
                if not task.done():  # the client left: cancelling closes the engine connection
                    task.cancel()
                    m.requests.labels(ENDPOINTS[kind], "499").inc()
                    return Response(status_code=499)
            routed = task.result()
        except ServeError as err:
            return refused(kind, err)
        except Exception as exc:  # a bug must still answer, be counted and be logged
            log.exception("request failed")
            m.requests.labels(ENDPOINTS[kind], "500").inc()
            return error_response(ServeError(f"internal error ({type(exc).__name__})"))
        m.routes.labels(routed.route, routed.reason).inc()
        resp = routed.response
        headers = dict(resp.headers, **{"x-edgepick-route": routed.route,
                                        "x-edgepick-route-reason": routed.reason})
        if locked:
            headers["x-edgepick-sampling"] = "locked:" + ",".join(locked)
        version = headers.get("x-edgepick-model-version", "")
        sampled = state.sampler.take()
        done = finish(kind, routed.route, t0, body, rr.task, version, sampled, rid)
        if resp.chunks is not None:
            usage = (raw.get("stream_options") or {}).get("include_usage") is True
            return StreamingResponse(relay_stream(resp, t0, sampled, done, usage),
                                     media_type="text/event-stream", headers=headers)
        out = measure_body(resp.body or {}, t0, time.monotonic(), sampled)
        done(out)
        return JSONResponse(resp.body, status_code=resp.status, headers=headers)

    @app.post("/v1/chat/completions", **describe("chat"))
    async def chat(request: Request) -> Response:
        return await handle(request, "chat")

    @app.post("/v1/completions", **describe("completion"))
    async def completions(request: Request) -> Response:
        return await handle(request, "completion")

    @app.post("/v1/embeddings", **describe("embedding"))
    async def embeddings(request: Request) -> Response:
        t0 = time.monotonic()
        embedder = getattr(state.pool, "embedder", None)
        try:
            check_key(request, s.api_key)
            raw = await read_json(request, s.max_body, s.body_timeout)
            if embedder is None:
                raise NotImplementedHere("this server has no embedding engine: deploy.yaml does "
                                         "not enable one (embeddings: {model, pooling}; "
                                         "docs/serve.md)")
            body = embedding_body(raw, getattr(embedder, "n_vocab", None))
            resp = await embedder.forward("embedding", body, False, t0 + s.deadline)
            out = embedding_answer(resp.body or {}, embedder.spec.name, raw.get("dimensions"))
        except ServeError as err:
            if isinstance(err, UpstreamError):
                err = from_upstream(err)
                if err.code == "context_length_exceeded":  # an input over the engine's n_ctx
                    err.param = "input"
            return refused("embedding", err)
        m.requests.labels(ENDPOINTS["embedding"], "200").inc()
        m.embedding_seconds.observe(time.monotonic() - t0)
        m.embedding_inputs.inc(len(out["data"]))
        m.tokens.labels("embedding").inc(out["usage"]["prompt_tokens"])
        return JSONResponse(out, headers=resp.headers)

    def cards() -> list[dict]:
        """The chat model first (what clients take as the served one), then the embedding one."""
        embedder = getattr(state.pool, "embedder", None)
        specs = [state.pool.spec] + ([embedder.spec] if embedder is not None else [])
        return [{"id": spec.name, "object": "model", "owned_by": "edgepick", "created": 0,
                 "version": spec.version} for spec in specs]

    @app.get("/v1/models", **describe("models"))
    async def models(request: Request) -> Response:
        check_key(request, s.api_key)
        return JSONResponse({"object": "list", "data": cards()})

    @app.get("/v1/models/{model_id:path}", **describe("model"))
    async def model(model_id: str, request: Request) -> Response:
        check_key(request, s.api_key)
        for card in cards():
            if model_id in (card["id"], f"{card['id']}@{card['version']}"):
                return JSONResponse(card)
        raise NotFound(f"model '{model_id}' is not served here (this server serves "
                       f"{', '.join(repr(c['id']) for c in cards())})", param="model",
                       code="model_not_found")

    @app.get("/health", **describe("health"))
    async def health() -> Response:
        # the pool's own word for why it is not ready: loading, unresponsive, restarting, failed
        pool = state.pool
        if not pool.ready:
            status = getattr(pool, "status", "loading")
            return JSONResponse({"status": status if status in NOT_READY else "loading"},
                                status_code=503, headers={"Retry-After": "2"})
        out = {"status": "ok", "model": pool.spec.name, "version": pool.spec.version}
        if getattr(pool, "degraded", None):
            out["detail"] = pool.degraded  # serving, and no longer restarting: say so
        return JSONResponse(out)

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        check_key(request, s.api_key)
        return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)

    @app.post("/admin/models/{action}", include_in_schema=False)
    async def admin(action: str, request: Request) -> Response:
        check_key(request, s.api_key)
        if state.admin is None:
            raise NotFound("this server was started without --registry")
        raw = await read_json(request, s.max_body, s.body_timeout)
        return JSONResponse(await state.admin.handle(action, raw))

    return app
