"""What serve's handlers share (the pool, router, settings and the deploy's serving rules), and
the router call that keeps edge-only requests on the device (serve/app.py's handlers use both)."""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

from starlette.requests import Request

from edgepick.serve.errors import BadRequest, EdgeOnlyUnavailable, ServeError
from edgepick.serve.router_api import Edge, EdgeOnlyRouter, RouteRequest, Router
from edgepick.serve.sampling import Sampler
from edgepick.serve.settings import ServeSettings

log = logging.getLogger("edgepick.serve")
TASK_HEADER = "x-edgepick-task"


class ServeState:
    """What the handlers share: the pool, the router, the settings, the deploy's serving rules
    (sampling, edge-only tasks), and background jobs."""

    def __init__(self, pool, settings: ServeSettings, router: Router | None = None,
                 sampler: Sampler | None = None,
                 background: list[Callable[[], Awaitable[None]]] | None = None,
                 admin: Any = None, deploy: Any = None, test_headers: bool = False) -> None:
        self.pool = pool
        self.settings = settings
        self.router = router or EdgeOnlyRouter()
        self.sampler = sampler or Sampler(settings.sample_rate, settings.sample_out)
        self.background = background or []
        self.admin = admin  # registry controller (serve/control.py), when --registry is given
        self.metrics = pool.metrics
        self.start_error: Exception | None = None
        self.on_start_failed: Callable[[Exception], None] | None = None
        self.deploy = deploy  # the DeployConfig served, when serve was given one
        sampling = getattr(deploy, "sampling", None)
        self.sampling: dict = sampling.model_dump(exclude_none=True) if sampling else {}
        self.lock_sampling = bool(getattr(deploy, "lock_sampling", False))
        self.edge_only: frozenset[str] = frozenset(getattr(deploy, "edge_only_tasks", None) or ())
        self.offline = getattr(deploy, "network", "online") == "offline"
        # x-edgepick-force-route / x-edgepick-mock-failure: tests only (route.allow_forced_route)
        self.test_headers = test_headers

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

    def task_of(self, request: RouteRequest) -> str | None:
        """The request's task type: the router's own reading when it has one (a classifier),
        else the `x-edgepick-task` header or `metadata.task`."""
        finder = getattr(self.router, "task_of", None)
        if finder is not None:
            return finder(request)
        meta = request.body.get("metadata")
        task = request.headers.get(TASK_HEADER)
        if not task and isinstance(meta, dict) and meta.get("task"):
            task = str(meta["task"])
        return task or None


async def until_disconnect(request: Request) -> None:
    # the body has been read, so the next ASGI message is the disconnect (or nothing at all)
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def route(state: ServeState, rr: RouteRequest, edge: Edge):
    """The router's answer; an edge-only task (or any request under `network: offline`) never
    leaves the edge, whatever the router does."""
    private = rr.task is not None and rr.task in state.edge_only
    try:
        routed = await state.router.route(rr, edge)
    except ServeError as err:
        if private and not isinstance(err, BadRequest) and err.status >= 429:
            raise EdgeOnlyUnavailable(
                f"task '{rr.task}' stays on this device (deploy.yaml edge_only_tasks) and the "
                f"edge cannot serve it now: {err.message}", retry_after=err.retry_after) from None
        raise
    if (private or state.offline) and not routed.route.startswith("edge"):
        await routed.response.aclose()  # a router that broke the contract
        log.error("router %s answered a request that must stay on the edge from %s; refused",
                  type(state.router).__name__, routed.route)
        raise EdgeOnlyUnavailable("this request must stay on this device (deploy.yaml "
                                  "edge_only_tasks / network: offline); the router did not keep "
                                  "it there")
    return routed
