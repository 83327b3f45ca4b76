"""The contract between `edgepick serve`'s HTTP handlers and whatever decides where a request
runs (seed 000 §4.3: edge first, cloud as fallback).

The app parses and checks a request (auth, body size, token caps), then calls
`router.route(RouteRequest, edge)` and sends back the `Routed.response`, setting the headers
`x-edgepick-route` / `x-edgepick-route-reason` from `Routed.route` / `Routed.reason` and counting
`edgepick_routes_total{route,reason}`. A router never touches HTTP: it receives the checked body
and returns a `ServedResponse`, or raises one of the `ServeError`s below, which the app turns
into the HTTP status named on each class (with `Retry-After` when `retry_after` is set).

`edge` is the local `EdgePool` (serve/edge.py): `await edge.forward(kind, body, stream,
deadline)` admits the request (bounded slots + queue), runs it on the active llama-server and
returns a `ServedResponse`, or raises `Overloaded`, `ResourceRefused`, `EngineUnavailable`,
`DeadlineExceeded` or `UpstreamError`. A router may catch those to fall back elsewhere.

A streaming `ServedResponse` carries `chunks`, an async iterator of raw SSE bytes (`data: ...\n\n`
events, ending with `data: [DONE]`); whoever consumes it must call `aclose()` when done or on
client disconnect: that releases the edge slot and cancels the generation in the engine.

The default router, `EdgeOnlyRouter`, runs everything on the edge. Another router is plugged in
with `create_app(..., router=...)` or, from the CLI, through the `edgepick.routers` entry point
group named by the policy file's `route:` section (issue 17).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, AsyncIterator, Literal, Mapping, Protocol, runtime_checkable

if TYPE_CHECKING:
    from edgepick.serve.edge import EdgePool

Kind = Literal["chat", "completion"]


class ServeError(Exception):
    """A request that cannot be served, with the HTTP status the client gets."""

    status: int = 500
    code: str = "server_error"

    def __init__(self, message: str, *, retry_after: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        if status is not None:
            self.status = status


class BadRequest(ServeError):
    status, code = 400, "invalid_request_error"


class Overloaded(ServeError):
    """Every slot and queue place is taken: refused at once (seed 000 §4.3)."""

    status, code = 429, "overloaded"


class ResourceRefused(ServeError):
    """The resource check before admission (free memory, load) refused it (seed 000 §5.2)."""

    status, code = 503, "insufficient_resources"


class EngineUnavailable(ServeError):
    """The engine is restarting, swapping or died mid-request; retrying later is safe."""

    status, code = 503, "engine_unavailable"


class DeadlineExceeded(ServeError):
    """Queue wait plus generation went past the request's deadline."""

    status, code = 504, "deadline_exceeded"


class UpstreamError(ServeError):
    """The engine answered with an HTTP error; `status` and `payload` are the engine's."""

    code = "upstream_error"

    def __init__(self, message: str, *, status: int, payload: dict | None = None) -> None:
        super().__init__(message, status=status)
        self.payload = payload


@dataclass
class RouteRequest:
    kind: Kind  # /v1/chat/completions or /v1/completions
    body: dict  # the checked OpenAI body (caps applied, `model` replaced by the served name)
    stream: bool
    deadline: float  # time.monotonic() by which the answer must be complete
    headers: Mapping[str, str] = field(default_factory=dict)  # the client's, lower-case names

    def remaining(self) -> float:
        return self.deadline - time.monotonic()


@dataclass
class ServedResponse:
    """A non-streaming answer (`body`) or a streaming one (`chunks`)."""

    body: dict | None = None
    chunks: AsyncIterator[bytes] | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    queue_wait_s: float = 0.0  # time spent waiting for admission, for the metrics
    _closer: object = None  # async callable run by aclose()

    async def aclose(self) -> None:
        closer, self._closer = self._closer, None
        if closer is not None:
            await closer()  # type: ignore[operator]


@dataclass
class Routed:
    response: ServedResponse
    route: str = "edge"  # label for the x-edgepick-route header and the metrics
    reason: str = "default"


@runtime_checkable
class Router(Protocol):
    async def route(self, request: RouteRequest, edge: "EdgePool") -> Routed: ...

    async def aclose(self) -> None: ...


class EdgeOnlyRouter:
    """Everything on the local engine; the edge's errors reach the client as they are."""

    async def route(self, request: RouteRequest, edge: "EdgePool") -> Routed:
        resp = await edge.forward(request.kind, request.body, request.stream, request.deadline)
        return Routed(resp, "edge", "default")

    async def aclose(self) -> None:
        return None
