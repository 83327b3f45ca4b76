"""The contract between `edgepick serve`'s HTTP handlers and whatever decides where a request
runs (seed 000 §4.3: edge first, cloud as fallback).

The app parses and checks a request (auth, body size and shape, token caps, deploy.yaml's
sampling), then calls `router.route(RouteRequest, edge)` and sends back the `Routed.response`,
setting the headers `x-edgepick-route` / `x-edgepick-route-reason` from `Routed.route` /
`Routed.reason` and counting `edgepick_routes_total{route,reason}`. A router never touches HTTP:
it receives the checked body and returns a `ServedResponse`, or raises one of the `ServeError`s
of serve/errors.py, which the app turns into the HTTP status named on each class, in OpenAI's
error shape (with `Retry-After` when `retry_after` is set).

`edge` is anything that satisfies `Edge` below (in serve: the local `EdgePool`,
serve/pool/edge.py): `await edge.forward(kind, body, stream, deadline)` admits the request (bounded
slots + queue), runs it on the active engine and returns a `ServedResponse`, or raises
`Overloaded`, `ResourceRefused`, `EngineUnavailable`, `DeadlineExceeded` or `UpstreamError`. A
router may catch those to fall back elsewhere. `body` is the request's typed model
(`request.typed()`, which the engine receives as JSON once) or a body dict the router wrote
itself (checked into the model by the pool).

Rules every router follows, whatever its name:
- `request.paths`, when not None, are the only paths it may use. Serve sets it to `("edge",)`
  for a task deploy.yaml keeps on the device (`edge_only_tasks`) and for the test header
  `x-edgepick-force-route: edge`; a router that cannot serve within it raises, and serve answers
  503 with the reason. Serve never hands a router a cloud under `network: offline`.
- `request.failing` names paths a test wants to fail on purpose (`x-edgepick-mock-failure`);
  serve already makes `edge` fail, a router fails its own other paths.

A streaming `ServedResponse` carries `chunks`, an async iterator of raw SSE bytes (`data: ...\n\n`
events, ending with `data: [DONE]`); whoever consumes it must call `aclose()` when done or on
client disconnect: that releases the edge slot and cancels the generation in the engine.

The default router, `EdgeOnlyRouter`, runs everything on the edge. Another router is plugged in
with `create_app(..., router=...)` or, from the CLI, through the `edgepick.routers` entry point
group named by the policy file's `route:` section (`route: {router: NAME, ...}`): the entry
point is called with that section (a dict, or None when the policy has none) and the
DeployConfig, validates the section itself and returns the router.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Literal, Mapping, Protocol, runtime_checkable

# the refusals a router raises or catches; defined with the rest of serve's errors
from edgepick.serve.errors import (BadRequest, DeadlineExceeded, EdgeOnlyUnavailable,  # noqa: F401
                                   EngineUnavailable, Overloaded, ResourceRefused, ServeError,
                                   UpstreamError)

Kind = Literal["chat", "completion"]
TASK_HEADER = "x-edgepick-task"


@dataclass
class RouteRequest:
    kind: Kind  # /v1/chat/completions or /v1/completions
    body: dict  # the checked OpenAI body (caps and deploy sampling applied, `model` removed)
    stream: bool
    deadline: float  # time.monotonic() by which the answer must be complete
    headers: Mapping[str, str] = field(default_factory=dict)  # the client's, lower-case names
    task: str | None = None  # the task type serve found (header, metadata or the router's own)
    paths: tuple[str, ...] | None = None  # the only paths allowed; None: the router's choice
    failing: frozenset[str] = frozenset()  # paths to fail on purpose (tests)
    request_id: str = ""
    sampling_locked: tuple[str, ...] = ()  # fields deploy.yaml's sampling set over the client's
    include_usage: bool = False  # a stream's final chunk carries usage (stream_options)
    constraint: str | None = None  # deploy | client: whose constraint of its task it carries
    model: str | None = None  # the `model` the client named (a team serves that member)
    # the checked request's typed model (serve/request_models.py), of which `body` is the dict
    # view, as the edge forwards it; None once `body` is replaced (then the pool checks the new
    # body into the model). A body is replaced, never changed in place.
    request: Any = None

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "body" and "body" in self.__dict__:
            self.__dict__["request"] = None
        super().__setattr__(name, value)

    def typed(self) -> Any:
        """What the edge forwards: the typed model, or the body that replaced it."""
        return self.request if self.request is not None else self.body

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def allows(self, path: str) -> bool:
        return self.paths is None or path in self.paths


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
class Edge(Protocol):
    """What a router sees of the local engine pool: admission and forwarding, token counting,
    readiness, the served model's spec (`spec.name`, `spec.runtime.n_ctx`) and the metrics
    registry a router may add its own series to (`metrics.registry`)."""

    spec: Any
    metrics: Any

    @property
    def ready(self) -> bool: ...

    async def forward(self, kind: Kind, body: Any, stream: bool,
                      deadline: float) -> ServedResponse: ...

    async def count_tokens(self, text: str) -> int: ...


@runtime_checkable
class Router(Protocol):
    # the longest prompt in tokens the router takes (serve refuses longer ones with a 400
    # before routing); None: what the edge's engine can take (serve/http/state.py)
    max_prompt_tokens: int | None

    async def route(self, request: RouteRequest, edge: Edge) -> Routed: ...

    def task_of(self, request: RouteRequest) -> str | None:
        """The request's task type, which serve's edge-only rule reads (a classifier may)."""

    async def aclose(self) -> None: ...


def declared_task(request: RouteRequest, header: str = TASK_HEADER) -> str | None:
    """The task type the client declares: the header (`x-edgepick-task` unless the policy
    names another), else `metadata.task`."""
    task = request.headers.get(header.lower())
    meta = request.body.get("metadata")
    if not task and isinstance(meta, dict) and meta.get("task"):
        task = str(meta["task"])
    return task or None


class RouterDefaults:
    """The Router protocol's readings for a router that has no view of its own: the declared
    task, and no prompt cap beyond the engine's. A router may subclass it."""

    max_prompt_tokens: int | None = None

    def task_of(self, request: RouteRequest) -> str | None:
        return declared_task(request)


class EdgeOnlyRouter(RouterDefaults):
    """Everything on the local engine; the edge's errors reach the client as they are."""

    async def route(self, request: RouteRequest, edge: Edge) -> Routed:
        resp = await edge.forward(request.kind, request.typed(), request.stream,
                                  request.deadline)
        # a team's member says why it was chosen (named by the request, its task's route)
        return Routed(resp, "edge", getattr(edge, "why", None) or "default")

    async def aclose(self) -> None:
        return None


class _Completed(RouterDefaults):
    """A plugin router written before the protocol declared task_of and max_prompt_tokens:
    its own route and aclose, the defaults for the rest."""

    def __init__(self, router: object) -> None:
        self.router = router

    async def route(self, request: RouteRequest, edge: Edge) -> Routed:
        return await self.router.route(request, edge)  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        await self.router.aclose()  # type: ignore[attr-defined]


def complete(router: object) -> Router:
    """The router as serve uses it, checked once where it is loaded: every member of the
    protocol present (the defaults filled in for an older plugin)."""
    if isinstance(router, Router):
        return router
    return _Completed(router)
