"""The one edge-only rule: a task deploy.yaml keeps on the device (`edge_only_tasks`), and every
request under `network: offline`, is answered by the edge or refused, whatever the router does
(seed 000 §4.3). Before routing it narrows the request's paths to the edge; after, it refuses
an answer from anywhere else; an edge that cannot serve such a task now is a 503 that says so.
"""

from __future__ import annotations

import logging
from typing import Any

from edgepick.serve.errors import BadRequest, EdgeOnlyUnavailable, ServeError
from edgepick.serve.http.forced_routes import MockFailingEdge, forced_routes
from edgepick.serve.router_api import Edge, Routed, RouteRequest

log = logging.getLogger("edgepick.serve")


class EdgeOnly:
    def __init__(self, deploy: Any = None) -> None:
        self.tasks: frozenset[str] = frozenset(getattr(deploy, "edge_only_tasks", None) or ())
        self.offline = getattr(deploy, "network", "online") == "offline"

    def private(self, rr: RouteRequest) -> bool:
        return rr.task is not None and rr.task in self.tasks

    def restrict(self, rr: RouteRequest, pool: Edge, test_headers: bool) -> Edge:
        """Set the request's allowed paths (the test headers', then this rule's); the edge the
        router gets (one that fails on purpose, when a test header asks)."""
        edge: Edge = pool
        if test_headers:
            rr.paths, rr.failing = forced_routes(rr.headers)
            if "edge" in rr.failing:
                edge = MockFailingEdge(pool)
        if self.offline or self.private(rr):
            if not rr.allows("edge"):
                why = (f"task '{rr.task}' stays on this device (deploy.yaml edge_only_tasks)"
                       if self.private(rr) else "deploy.yaml says network: offline")
                raise EdgeOnlyUnavailable(f"{why}; a forced route to the cloud is refused")
            rr.paths = ("edge",)
        return edge

    def refusal(self, rr: RouteRequest, err: ServeError) -> ServeError:
        """The router's refusal as the client gets it: for a private task the edge could not
        serve (overloaded, restarting), a 503 naming the rule."""
        if self.private(rr) and not isinstance(err, BadRequest) and err.status >= 429:
            return EdgeOnlyUnavailable(
                f"task '{rr.task}' stays on this device (deploy.yaml edge_only_tasks) and the "
                f"edge cannot serve it now: {err.message}", retry_after=err.retry_after)
        return err

    async def check_answer(self, rr: RouteRequest, routed: Routed, router: object) -> None:
        """Refuse an answer that left the device when it must not have (a router that broke
        the contract)."""
        if (self.private(rr) or self.offline) and not routed.route.startswith("edge"):
            await routed.response.aclose()
            log.error("router %s answered a request that must stay on the edge from %s; "
                      "refused", type(router).__name__, routed.route)
            raise EdgeOnlyUnavailable("this request must stay on this device (deploy.yaml "
                                      "edge_only_tasks / network: offline); the router did not "
                                      "keep it there")
