"""What serve's handlers share, typed: the pool, the router, the settings and the deploy's
serving rules (sampling, the edge-only rule), and the router call under that rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

from starlette.requests import Request

from edgepick.serve.errors import ServeError
from edgepick.serve.http.edge_only import EdgeOnly
from edgepick.serve.http.task_constraints import TaskConstraints
from edgepick.serve.loop.sampling import Sampler
from edgepick.serve.metrics import ServeMetrics
from edgepick.serve.router_api import (Edge, EdgeOnlyRouter, Routed, RouteRequest, Router,
                                       complete)
from edgepick.serve.settings import ServeSettings

if TYPE_CHECKING:
    from edgepick.serve.pool.control import RegistryControl
    from edgepick.serve.pool.edge import EdgePool


class ServeState:
    """What the handlers share: the pool, the router, the settings, the deploy's serving rules
    (sampling, edge-only tasks, offline), and background jobs."""

    def __init__(self, pool: "EdgePool", settings: ServeSettings, router: Router | None = None,
                 sampler: Sampler | None = None,
                 background: list[Callable[[], Awaitable[None]]] | None = None,
                 admin: "RegistryControl | None" = None, deploy: Any = None,
                 test_headers: bool = False) -> None:
        self.pool = pool
        self.settings = settings
        self.router: Router = complete(router or EdgeOnlyRouter())
        self.sampler = sampler or Sampler(settings.sample_rate, settings.sample_out)
        self.background = background or []
        self.admin = admin  # registry controller (serve/pool/control.py), when --registry is given
        self.metrics: ServeMetrics = pool.metrics
        self.start_error: Exception | None = None
        self.on_start_failed: Callable[[Exception], None] | None = None
        self.deploy = deploy  # the DeployConfig served, when serve was given one
        sampling = getattr(deploy, "sampling", None)
        self.sampling: dict = sampling.model_dump(exclude_none=True) if sampling else {}
        self.lock_sampling = bool(getattr(deploy, "lock_sampling", False))
        self.edge_only = EdgeOnly(deploy)
        self.constraints = TaskConstraints(deploy)  # deploy.yaml's per task
        # x-edgepick-force-route / x-edgepick-mock-failure: tests only (route.allow_forced_route)
        self.test_headers = test_headers
        self.history: Any = None  # the metrics' snapshots (serve/loop/history.py), once kept

    def edge_for(self, rr: RouteRequest) -> Edge:
        """The edge the router gets: the pool, or a team's member for this request's model or
        task (serve/pool/team.py)."""
        edge_for = getattr(type(self.pool), "edge_for", None)
        return edge_for(self.pool, rr) if edge_for is not None else self.pool

    @property
    def max_prompt_tokens(self) -> int:
        if self.settings.max_prompt_tokens:
            return self.settings.max_prompt_tokens
        # A router that cuts long chats to the window or sends them to the cloud declares its
        # own limit (route/router.py); the edge-only default is what the engine can take.
        if self.router.max_prompt_tokens:
            return self.router.max_prompt_tokens
        n_ctx = self.pool.spec.runtime.n_ctx  # room for the answer, but never under half
        return n_ctx - min(self.settings.max_tokens, n_ctx // 2)


async def until_disconnect(request: Request) -> None:
    # the body has been read, so the next ASGI message is the disconnect (or nothing at all)
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def route(state: ServeState, rr: RouteRequest, edge: Edge) -> Routed:
    """The router's answer under the edge-only rule (serve/http/edge_only.py)."""
    try:
        routed = await state.router.route(rr, edge)
    except ServeError as err:
        refusal = state.edge_only.refusal(rr, err)
        if refusal is err:
            raise
        raise refusal from None
    await state.edge_only.check_answer(rr, routed, state.router)
    return routed
