"""The handlers beside generation: `/v1/embeddings` (the deploy's embedding engine), the model
cards, `/health`, `/metrics` and the registry's admin endpoint. Each checks the key itself and
answers refusals in OpenAI's shape (serve/errors.py)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from edgepick.serve.errors import (NotFound, NotImplementedHere, ServeError, UpstreamError,
                                   from_upstream)
from edgepick.serve.http.answer_models import NOT_READY
from edgepick.serve.http.embeddings import answer as embedding_answer, embedding_body, empty_input
from edgepick.serve.http.generate import ENDPOINTS, refused
from edgepick.serve.http.openapi_doc import describe
from edgepick.serve.http.request_checks import check_key, read_json
from edgepick.serve.http.state import ServeState
from edgepick.serve.router_api import ServedResponse


async def embedding_of(state: ServeState, raw: dict, t0: float) -> tuple[dict, ServedResponse]:
    """The deploy's embedding engine's answer to a checked-for-JSON body, in OpenAI's shape;
    raises the ServeError a client gets (serve/http/ollama/ reshapes the same answer)."""
    embedder = state.pool.embedder
    try:
        if embedder is None:
            raise NotImplementedHere("this server has no embedding engine: deploy.yaml does "
                                     "not enable one (embeddings: {model, pooling}; "
                                     "docs/serve.md)")
        body = embedding_body(raw, embedder.n_vocab)
        resp = await embedder.forward("embedding", body, False, t0 + state.settings.deadline)
        return embedding_answer(resp.body or {}, embedder.spec.name, raw.get("dimensions")), resp
    except UpstreamError as upstream:
        err = from_upstream(upstream)
        if err.code == "context_length_exceeded":  # an input over the engine's n_ctx
            err.param = "input"
        elif embedder is not None:
            err = await empty_input(embedder, raw, err)
        raise err from None


def count_embedding(state: ServeState, out: dict, t0: float, endpoint: str) -> None:
    m = state.metrics
    m.requests.labels(endpoint, "200").inc()
    m.embedding_seconds.observe(time.monotonic() - t0)
    m.embedding_inputs.inc(len(out["data"]))
    m.tokens.labels("embedding").inc(out["usage"]["prompt_tokens"])


async def embed(state: ServeState, request: Request) -> Response:
    t0 = time.monotonic()
    s = state.settings
    try:
        check_key(request, s.api_key)
        raw = await read_json(request, s.max_body, s.body_timeout)
        out, resp = await embedding_of(state, raw, t0)
    except ServeError as err:
        return refused(state, "embedding", err)
    count_embedding(state, out, t0, ENDPOINTS["embedding"])
    return JSONResponse(out, headers=resp.headers)


def cards(state: ServeState) -> list[dict]:
    """The chat model first (what clients take as the served one), then the embedding one; a
    team lists every member with its state (serve/pool/team.py)."""
    if hasattr(type(state.pool), "cards"):
        return state.pool.cards()
    embedder = state.pool.embedder
    specs = [state.pool.spec] + ([embedder.spec] if embedder is not None else [])
    return [{"id": spec.name, "object": "model", "owned_by": "edgepick", "created": 0,
             "version": spec.version} for spec in specs]


def health(state: ServeState) -> Response:
    # the pool's own word for why it is not ready: loading, unresponsive, restarting, failed
    pool = state.pool
    if not pool.ready:
        status = pool.status
        return JSONResponse({"status": status if status in NOT_READY else "loading"},
                            status_code=503, headers={"Retry-After": "2"})
    out = {"status": "ok", "model": pool.spec.name, "version": pool.spec.version}
    if pool.degraded:
        out["detail"] = pool.degraded  # serving, and no longer restarting: say so
    return JSONResponse(out)


def info_router(state: ServeState) -> APIRouter:
    router = APIRouter()
    s = state.settings

    @router.post("/v1/embeddings", **describe("embedding"))
    async def embeddings(request: Request) -> Response:
        return await embed(state, request)

    @router.get("/v1/models", **describe("models"))
    async def models(request: Request) -> Response:
        check_key(request, s.api_key)
        return JSONResponse({"object": "list", "data": cards(state)})

    @router.get("/v1/models/{model_id:path}", **describe("model"))
    async def model(model_id: str, request: Request) -> Response:
        check_key(request, s.api_key)
        for card in cards(state):
            if model_id in (card["id"], f"{card['id']}@{card['version']}"):
                return JSONResponse(card)
        raise NotFound(f"model '{model_id}' is not served here (this server serves "
                       f"{', '.join(repr(c['id']) for c in cards(state))})", param="model",
                       code="model_not_found")

    @router.get("/health", **describe("health"))
    async def health_probe() -> Response:
        return health(state)

    @router.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        check_key(request, s.api_key)
        return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @router.post("/admin/models/{action}", include_in_schema=False)
    async def admin(action: str, request: Request) -> Response:
        check_key(request, s.api_key)
        if state.admin is None:
            raise NotFound("this server was started without --registry")
        raw = await read_json(request, s.max_body, s.body_timeout)
        return JSONResponse(await state.admin.handle(action, raw))

    return router
