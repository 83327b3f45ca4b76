"""The handlers of Ollama's native API. Generation runs serve's own path (serve/http/generate.py:
`checked` for the key, caps, sampling and constraints, `routed_or_gone` for the edge-only rule
and the router, `prepared` for the metrics), counted under its `/api/...` endpoint; embeddings
run serve/http/info_api.py's. Every refusal answers `{"error": "..."}` with `x-request-id`."""

from __future__ import annotations

import logging
import time
from typing import Callable
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from edgepick import __version__
from edgepick.serve.errors import BadRequest, NotFound, ServeError
from edgepick.serve.http.generate import checked, count_refusal, prepared, routed_or_gone
from edgepick.serve.http.info_api import count_embedding, embedding_of
from edgepick.serve.http.ollama import catalog, keep_alive
from edgepick.serve.http.ollama.answers import NDJSON, error_response, ndjson, now_iso, whole
from edgepick.serve.http.ollama.requests import (TOOL_CHOICE_HEADER, Translated, chat, generate,
                                            tool_choice)
from edgepick.serve.http.relay import measure_body, relay_stream
from edgepick.serve.http.request_checks import check_key, read_json
from edgepick.serve.http.state import ServeState

log = logging.getLogger("edgepick.serve")
# the Ollama API release whose shapes these handlers answer (tool calls with `index`, /api/ps
# with `context_length`)
OLLAMA_API_VERSION = "0.12.0"


def _served(state: ServeState, model: str, embedding: bool) -> catalog.Served:
    found = catalog.find(state.pool, model)
    if found is None:
        names = ", ".join(repr(s.name) for s in catalog.served(state.pool))
        raise NotFound(f"model '{model}' not found (this server serves {names})",
                       param="model")
    if found.embedding != embedding:
        raise BadRequest(f"model '{model}' does not support "
                         f"{'embeddings' if embedding else 'generate'}", param="model")
    return found


async def _load_or_unload(state: ServeState, api: str, t: Translated, name: str,
                          asked: keep_alive.Asked | None, t0: float) -> dict:
    """A request with nothing to generate: Ollama's way to load a model, or with keep_alive 0
    to unload it."""
    residency = getattr(state.pool, "residency", None)
    reason = "load"
    if asked is not None and asked.unload and residency is not None:
        reason = "unload"  # now, or once idle (its ttl is 0)
        await residency.unload_now(name, "keep_alive")
    elif residency is not None:
        await residency.acquire(name, t0 + state.settings.deadline)
        await residency.release(name)
    out: dict = {"model": t.model, "created_at": now_iso()}
    out.update({"message": {"role": "assistant", "content": ""}} if api == "chat"
               else {"response": ""})
    out.update(done=True, done_reason=reason)
    return out


def _empty(t: Translated) -> bool:
    if t.kind == "completion":
        return t.body["prompt"] == ""
    msgs = t.body["messages"]
    return not msgs or (len(msgs) == 1 and msgs[0].get("content") == "")


async def _generation(state: ServeState, request: Request, api: str) -> Response:
    t0 = time.monotonic()
    endpoint = f"/api/{api}"
    s = state.settings
    note = None
    try:
        check_key(request, s.api_key)
        raw = await read_json(request, s.max_body, s.body_timeout)
        t = chat(raw) if api == "chat" else generate(raw)
        tool_choice(t, request.headers.get(TOOL_CHOICE_HEADER))
        name = _served(state, t.model, embedding=False).name
        asked = keep_alive.parse(t.keep_alive)
        n_ctx = state.pool.spec.runtime.n_ctx
        if t.num_ctx is not None and n_ctx and t.num_ctx > n_ctx:
            raise BadRequest(f"'options.num_ctx' {t.num_ctx} is over the engine's context of "
                             f"{n_ctx} tokens (deploy.yaml runtime.n_ctx; this server does "
                             "not reload a model per request)", param="options.num_ctx")
        if _empty(t):
            note = keep_alive.apply(state.pool, name, asked)
            out = await _load_or_unload(state, api, t, name, asked, t0)
            state.metrics.requests.labels(endpoint, "200").inc()
            return _with_note(JSONResponse(out), out, note)
        body = dict(t.body, model=name, stream=t.stream)
        rr = await checked(state, request, t.kind, t0, raw=body, prompt_cap=t.num_ctx)
        note = keep_alive.apply(state.pool, name, asked)  # once the request is accepted
        routed = await routed_or_gone(state, request, rr)
    except ServeError as err:
        return error_response(count_refusal(state, endpoint, err))
    except Exception as exc:  # a bug must still answer, be counted and be logged
        log.exception("request failed")
        state.metrics.requests.labels(endpoint, "500").inc()
        return error_response(ServeError(f"internal error ({type(exc).__name__})"))
    if routed is None:
        state.metrics.requests.labels(endpoint, "499").inc()
        return Response(status_code=499)
    headers, sampled, done = prepared(state, rr, routed, t0, endpoint)
    if note:
        headers[keep_alive.HEADER] = note
    resp = routed.response
    if resp.chunks is not None:
        events = relay_stream(resp, t0, sampled, done, True)
        return StreamingResponse(ndjson(api, t.model, events, t0, 0.0, note),
                                 media_type=NDJSON, headers=headers)
    done(measure_body(resp.body or {}, t0, time.monotonic(), sampled))
    out = whole(api, t.model, resp.body or {}, t0, 0.0)
    headers.pop("content-length", None)
    return _with_note(JSONResponse(out, status_code=resp.status, headers=headers), out, note)


def _with_note(resp: JSONResponse, out: dict, note: str | None) -> JSONResponse:
    if note:
        out["keep_alive"] = note
        resp.headers[keep_alive.HEADER] = note
        resp.body = resp.render(out)
        resp.headers["content-length"] = str(len(resp.body))
    return resp


async def _embed(state: ServeState, request: Request, legacy: bool = False) -> Response:
    """`/api/embed` ({input} → {embeddings}), or with `legacy` Ollama's older `/api/embeddings`
    ({prompt} → {embedding})."""
    t0 = time.monotonic()
    s = state.settings
    endpoint = "/api/embeddings" if legacy else "/api/embed"
    note = None
    try:
        check_key(request, s.api_key)
        raw = await read_json(request, s.max_body, s.body_timeout)
        model = raw.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequest("model is required", param="model")
        found = _served(state, model, embedding=True)
        if raw.get("options"):
            raise BadRequest("'options' are set when the embedding engine loads (deploy.yaml), "
                             "not per request, on this server", param="options")
        asked = keep_alive.parse(raw.get("keep_alive"))
        if asked is not None and not asked.pin:
            note = f"{found.name} stays loaded: it is this server's embedding engine"
        inputs = raw.get("prompt" if legacy else "input", [])
        if legacy and inputs is not None and not isinstance(inputs, str):
            raise BadRequest("'prompt' must be a string", param="prompt")
        if inputs in ([], "", None):
            out: dict = {"embedding": []} if legacy else {"model": model, "embeddings": []}
            return _with_note(JSONResponse(out), out, note)
        body = {"input": inputs, "dimensions": raw.get("dimensions")}
        answer, _ = await embedding_of(state, {k: v for k, v in body.items() if v is not None},
                                       t0)
    except ServeError as err:
        return error_response(count_refusal(state, endpoint, err))
    count_embedding(state, answer, t0, endpoint)
    vectors = [d["embedding"] for d in answer["data"]]
    out = {"embedding": vectors[0]} if legacy else {
        "model": model, "embeddings": vectors,
        "total_duration": int((time.monotonic() - t0) * 1e9), "load_duration": 0,
        "prompt_eval_count": int(answer["usage"]["prompt_tokens"])}
    return _with_note(JSONResponse(out), out, note)


def ollama_router(state: ServeState) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    s = state.settings

    @router.post("/api/chat")
    async def api_chat(request: Request) -> Response:
        return await _generation(state, request, "chat")

    @router.post("/api/generate")
    async def api_generate(request: Request) -> Response:
        return await _generation(state, request, "generate")

    @router.post("/api/embed")
    async def api_embed(request: Request) -> Response:
        return await _embed(state, request)

    @router.post("/api/embeddings")
    async def api_embeddings(request: Request) -> Response:
        return await _embed(state, request, legacy=True)

    def listing(path: str, answer: Callable[[], dict]) -> None:
        """A GET that reads no body: the key, then the answer."""

        @router.get(path)
        async def read(request: Request) -> Response:
            try:
                check_key(request, s.api_key)
            except ServeError as err:
                return error_response(err)
            return JSONResponse(answer())

    listing("/api/tags", lambda: {"models": [catalog.tag(m)
                                             for m in catalog.served(state.pool)]})
    listing("/api/ps", lambda: {"models": [catalog.process(m) for m in catalog.served(state.pool)
                                           if m.state == "loaded"]})
    listing("/api/version", lambda: {"version": OLLAMA_API_VERSION, "edgepick": __version__})

    @router.post("/api/show")
    async def api_show(request: Request) -> Response:
        try:
            check_key(request, s.api_key)
            raw = await read_json(request, s.max_body, s.body_timeout)
            model = raw.get("model") or raw.get("name")  # `name`: Ollama's older field
            if not isinstance(model, str):
                raise BadRequest("model is required", param="model")
            found = catalog.find(state.pool, model)
            if found is None:
                raise NotFound(f"model '{model}' not found", param="model")
        except ServeError as err:
            return error_response(err)
        return JSONResponse(catalog.show(found))

    return router
