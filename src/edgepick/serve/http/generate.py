"""The generation handlers, `/v1/chat/completions` and `/v1/completions`: check the request,
keep it on the device when deploy.yaml says so (serve/http/edge_only.py), hand it to the router,
and send back its answer, counted and measured (serve/http/relay.py), sampled when chosen.

Handlers never know which engine answers: the router decides (serve/router_api.py). Every
refusal is counted and answered in OpenAI's shape (serve/errors.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from edgepick.serve.errors import (ClientGone, ServeError, UpstreamError, error_response,
                                   from_upstream)
from edgepick.serve.http.openapi_doc import describe
from edgepick.serve.http.relay import Outcome, measure_body, relay_stream
from edgepick.serve.http.request_checks import check_body, check_key, read_json
from edgepick.serve.http.state import ServeState, route, until_disconnect
from edgepick.serve.http.task_constraints import HEADER as CONSTRAINT_HEADER
from edgepick.serve.pool.forwarded import apply_sampling, wire
from edgepick.serve.pool.team import MODEL_HEADER
from edgepick.serve.router_api import Kind, Routed, RouteRequest

log = logging.getLogger("edgepick.serve")
ENDPOINTS: dict[str, str] = {"chat": "/v1/chat/completions", "completion": "/v1/completions",
                             "embedding": "/v1/embeddings"}


def count_refusal(state: ServeState, endpoint: str, err: ServeError) -> ServeError:
    """A refusal counted (endpoint and status; 429s and resource refusals by reason), in
    edgepick's shape."""
    m = state.metrics
    if isinstance(err, UpstreamError):
        err = from_upstream(err)
    if err.status == 429 or err.code == "insufficient_resources":
        m.rejections.labels(err.label).inc()
    m.requests.labels(endpoint, str(err.status)).inc()
    if isinstance(err, ClientGone):
        log.info("client gone: %s", err.message)
    return err


def refused(state: ServeState, kind: str, err: ServeError) -> Response:
    return error_response(count_refusal(state, ENDPOINTS[kind], err))


def finish(state: ServeState, rr: RouteRequest, route_name: str, t0: float, version: str,
           sampled: bool, endpoint: str | None = None,
           model: str | None = None) -> Callable[[Outcome], None]:
    """What runs once an answer is complete: its metrics, and the sample when chosen. `model`:
    the team member that answered (its speculation counts under its name), else the route."""
    m = state.metrics
    endpoint = endpoint or ENDPOINTS[rr.kind]

    def done(out: Outcome) -> None:
        m.requests.labels(endpoint, str(out.status)).inc()
        m.e2e.labels(route_name).observe(time.monotonic() - t0)
        if out.first_s is not None:
            m.ttft.labels(route_name).observe(out.first_s)
        for g in out.gaps:
            m.itl.labels(route_name).observe(g)
        if out.decode_tps:
            m.decode_tps.labels(route_name).observe(out.decode_tps)
        m.tokens.labels("prompt").inc(out.prompt_tokens)
        m.tokens.labels("completion").inc(out.completion_tokens)
        if out.drafted:
            task = rr.task or "none"
            m.speculative.labels(model or route_name, task, "drafted").inc(out.drafted)
            m.speculative.labels(model or route_name, task, "accepted").inc(out.accepted)
        if out.status == 200 and out.prompt_tokens:  # the length drift check's input (H)
            m.prompt_tokens.observe(out.prompt_tokens)
            m.completion_tokens.observe(out.completion_tokens)
        if sampled and out.status == 200:
            why, fmt = state.sampler.record(rr.kind, rr.body, "".join(out.text),
                                            out.finish_reason, rr.task, version,
                                            request_id=rr.request_id)
            m.sampled.labels("unacceptable" if why else "ok").inc()
            if fmt:
                m.sampled_format_errors.inc()
    return done


async def checked(state: ServeState, request: Request, kind: Kind, t0: float,
                  raw: dict | None = None, prompt_cap: int | None = None) -> RouteRequest:
    """The request as the router gets it: key, body, caps and deploy.yaml's sampling applied;
    its typed model is what the edge forwards, its body the router's view of it. `raw` is a
    body another API already read and translated (serve/http/ollama/), `prompt_cap` a tighter
    prompt limit it asked for."""
    s = state.settings
    if raw is None:
        check_key(request, s.api_key)
        raw = await read_json(request, s.max_body, s.body_timeout)
    cap = min(state.max_prompt_tokens, prompt_cap or state.max_prompt_tokens)
    checked_request = await check_body(kind, raw, max_tokens=s.max_tokens,
                                       max_n=state.pool.spec.slots, n_vocab=state.pool.n_vocab,
                                       max_prompt_tokens=cap,
                                       max_prompts=s.max_prompts,
                                       count_tokens=state.pool.count_tokens)
    typed, locked = apply_sampling(checked_request, state.sampling, state.lock_sampling)
    usage = (raw.get("stream_options") or {}).get("include_usage") is True
    rr = RouteRequest(kind, wire(typed), typed.stream is True, t0 + s.deadline,
                      {k.lower(): v for k, v in request.headers.items()},
                      request_id=request.state.request_id, sampling_locked=tuple(locked),
                      include_usage=usage, request=typed,
                      model=raw["model"] if isinstance(raw.get("model"), str) else None)
    rr.task = state.router.task_of(rr)
    state.constraints.apply(rr)
    return rr


async def routed_or_gone(state: ServeState, request: Request, rr: RouteRequest) -> Routed | None:
    """The router's answer, or None when the client left first (its work is cancelled)."""
    edge = state.edge_only.restrict(rr, state.edge_for(rr), state.test_headers)
    task = asyncio.create_task(route(state, rr, edge))
    # one step lets a refusal (429, 503) finish before a disconnect watcher is set up: under
    # overload most requests end here, and they must end fast
    await asyncio.sleep(0)
    if not task.done():
        gone = asyncio.create_task(until_disconnect(request))
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        gone.cancel()
        if not task.done():  # the client left: cancelling closes the engine connection
            task.cancel()
            return None
    return task.result()


def prepared(state: ServeState, rr: RouteRequest, routed: Routed, t0: float,
             endpoint: str | None = None) -> tuple[dict, bool, Callable[[Outcome], None]]:
    """An answer's headers, whether it is sampled, and what runs once it is complete."""
    state.metrics.routes.labels(routed.route, routed.reason).inc()
    resp = routed.response
    headers = dict(resp.headers, **{"x-edgepick-route": routed.route,
                                    "x-edgepick-route-reason": routed.reason})
    if rr.sampling_locked:
        headers["x-edgepick-sampling"] = "locked:" + ",".join(rr.sampling_locked)
    if rr.constraint:
        headers[CONSTRAINT_HEADER] = rr.constraint
    sampled = state.sampler.take()
    done = finish(state, rr, routed.route, t0, headers.get("x-edgepick-model-version", ""),
                  sampled, endpoint, model=headers.get(MODEL_HEADER))
    return headers, sampled, done


def answer(state: ServeState, rr: RouteRequest, routed: Routed, t0: float) -> Response:
    resp = routed.response
    headers, sampled, done = prepared(state, rr, routed, t0)
    if resp.chunks is not None:
        return StreamingResponse(relay_stream(resp, t0, sampled, done, rr.include_usage),
                                 media_type="text/event-stream", headers=headers)
    done(measure_body(resp.body or {}, t0, time.monotonic(), sampled))
    return JSONResponse(resp.body, status_code=resp.status, headers=headers)


async def handle(state: ServeState, request: Request, kind: Kind) -> Response:
    t0 = time.monotonic()
    try:
        rr = await checked(state, request, kind, t0)
        routed = await routed_or_gone(state, request, rr)
    except ServeError as err:
        return refused(state, kind, err)
    except Exception as exc:  # a bug must still answer, be counted and be logged
        log.exception("request failed")
        state.metrics.requests.labels(ENDPOINTS[kind], "500").inc()
        return error_response(ServeError(f"internal error ({type(exc).__name__})"))
    if routed is None:
        state.metrics.requests.labels(ENDPOINTS[kind], "499").inc()
        return Response(status_code=499)
    return answer(state, rr, routed, t0)


def generate_router(state: ServeState) -> APIRouter:
    router = APIRouter()

    @router.post("/v1/chat/completions", **describe("chat"))
    async def chat(request: Request) -> Response:
        return await handle(state, request, "chat")

    @router.post("/v1/completions", **describe("completion"))
    async def completions(request: Request) -> Response:
        return await handle(state, request, "completion")

    return router
