"""The loop's endpoints: `POST /v1/feedback {request_id, rating: up|down, reason?}`
from users, and `GET /metrics/history?ago=SECONDS` for `edgepick monitor --window`.

Feedback is counted once per request id (`edgepick_feedback_total{rating}`); the user-feedback
rate `monitor` shows is down-rated answers over answered requests, with its interval. A "down"
on a sampled request marks its item a badcase for the next round (serve/loop/sampling.py).

Mounted by serve/http/app.py with `app.include_router(loop_router(state))`; the background jobs
(snapshots, cloud references, engine fate) are appended to the state's jobs here.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import ValidationError

from edgepick.errors import first_problem
from edgepick.serve.http.openapi_doc import describe
from edgepick.serve.http.request_checks import check_json_type, check_key
from edgepick.serve.loop.history import AGE_HEADER, MetricsHistory
from edgepick.serve.loop.references import sampler_for
from edgepick.serve.pool.policy_file import ServePolicy
from edgepick.serve.request_models import FeedbackBody
from edgepick.serve.router_api import BadRequest

if TYPE_CHECKING:
    from edgepick.serve.pool.edge import EdgePool
    from edgepick.serve.metrics import ServeMetrics
    from edgepick.serve.loop.sampling import Sampler
    from edgepick.serve.settings import ServeSettings

MAX_FEEDBACK_BODY = 16 * 1024
REMEMBERED = 100_000


class LoopState(Protocol):
    """What the loop's endpoints and jobs need of the app's state (serve/http/state.py's
    ServeState)."""

    pool: "EdgePool"
    settings: "ServeSettings"
    sampler: "Sampler"
    metrics: "ServeMetrics"
    deploy: Any
    background: list[Callable[[], Awaitable[None]]]
    history: Any


class FeedbackBook:
    """The first rating per request id counts; a later "down" still marks the sampled item."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, str] = OrderedDict()

    def first(self, request_id: str, rating: str) -> bool:
        if request_id in self._seen:
            return False
        self._seen[request_id] = rating
        while len(self._seen) > REMEMBERED:
            self._seen.popitem(last=False)
        return True


async def watch_engine(state: LoopState, every_s: float = 0.25) -> None:
    """Keeps the engine's cgroup counter and the peak memory current, and classifies an engine
    that died on its own (the pool counts it as a `crash` restart) by its exit signal and the
    cgroup's OOM counter (serve/availability.py)."""
    m = state.metrics
    fate = m.engine_fate

    def crashes() -> float:
        return m.registry.get_sample_value("edgepick_engine_restarts_total",
                                           {"reason": "crash"}) or 0.0

    seen, watched = crashes(), None
    while True:
        engine = state.pool.engine
        if watched is not None and watched.proc is not None \
                and watched.proc.returncode is not None and crashes() > seen:
            fate.exited(watched.proc.returncode)
            watched = None
        seen = crashes()
        if engine is not None and engine.alive:
            watched = engine
            fate.watch(engine.pid)
        fate.sample_memory(state.pool.last_memory)
        await asyncio.sleep(every_s)


def configure_sampler(state: LoopState) -> None:
    """The sampler from the policy file's `sampling:` section, deploy.yaml's edge-only tasks
    and its cloud (serve/loop/references.py); a sampler handed to the state already is kept."""
    if state.sampler.metrics is not None:
        return

    policy = ServePolicy.load(state.settings.policy)
    state.sampler = sampler_for(state.settings, policy, state.deploy, state.metrics)


def loop_router(state: LoopState) -> APIRouter:
    configure_sampler(state)
    router = APIRouter()
    book = FeedbackBook()
    history = MetricsHistory(state.metrics.registry)
    state.history = history  # the status page's window too (serve/http/status_page.py)
    state.background.append(history.run)
    state.background.append(lambda: watch_engine(state))
    refs = state.sampler.references
    if refs is not None:
        state.background.append(refs.run)

    @router.post("/v1/feedback", summary="Rate an answer by its x-request-id",
                 **describe("feedback"))
    async def feedback(request: Request) -> Response:
        check_key(request, state.settings.api_key)
        check_json_type(request)
        raw = await request.body()
        if len(raw) > MAX_FEEDBACK_BODY:
            raise BadRequest(f"feedback body over {MAX_FEEDBACK_BODY} bytes", status=413)
        try:
            body = FeedbackBody.model_validate(json.loads(raw.decode("utf-8") or "null"))
        except (ValueError, ValidationError, RecursionError) as exc:
            raise _refusal(exc) from None
        counted = book.first(body.request_id, body.rating)
        if counted:
            state.metrics.feedback.labels(body.rating).inc()
        sampled = state.sampler.feedback(body.request_id, body.rating, body.reason)
        return JSONResponse({"request_id": body.request_id, "rating": body.rating,
                             "counted": counted, "sampled": sampled,
                             "badcase": sampled and body.rating == "down"})

    @router.get("/metrics/history", include_in_schema=False)
    async def metrics_history(request: Request,
                              ago: float = Query(300.0, ge=0, le=7 * 86400)) -> Response:
        check_key(request, state.settings.api_key)
        age, text = history.at(ago)
        return Response(text, media_type=CONTENT_TYPE_LATEST,
                        headers={AGE_HEADER: f"{age:.3f}"})

    return router


def _refusal(exc: Exception) -> BadRequest:
    """A 400 naming the field (OpenAI's `param`) when one is at fault."""
    expected = "(expected {request_id, rating: up|down, reason?})"
    if isinstance(exc, RecursionError):
        return BadRequest("feedback: the body is nested too deeply", code="invalid_json")
    if isinstance(exc, ValidationError):
        field, problem = first_problem(exc)
        return BadRequest(f"feedback: {field or 'body'}: {problem} {expected}", param=field)
    return BadRequest(f"feedback: the body is not JSON {expected}", code="invalid_json")
