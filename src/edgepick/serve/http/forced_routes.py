"""The test-only headers, read by serve for every router, and only when the
policy's `route.allow_forced_route` is true: `x-edgepick-force-route: edge|cloud` allows only
that path, `x-edgepick-mock-failure: edge,cloud` makes those paths fail on purpose. Serve fails
the edge itself; a router fails its own other paths when `RouteRequest.failing` names them."""

from __future__ import annotations

from typing import Any, Mapping

from edgepick.serve.errors import BadRequest, Overloaded
from edgepick.serve.router_api import Kind, ServedResponse

FORCE_HEADER = "x-edgepick-force-route"
MOCK_HEADER = "x-edgepick-mock-failure"
PATHS = ("edge", "cloud")


def forced_routes(headers: Mapping[str, str]) -> tuple[tuple[str, ...] | None, frozenset[str]]:
    """(the only paths allowed, or None; the paths that must fail)."""
    forced = headers.get(FORCE_HEADER, "").strip()
    if forced and forced not in PATHS:
        raise BadRequest(f"{FORCE_HEADER} must be one of {', '.join(PATHS)}", param=FORCE_HEADER)
    failing = frozenset(p.strip() for p in headers.get(MOCK_HEADER, "").split(",") if p.strip())
    if failing - set(PATHS):
        raise BadRequest(f"{MOCK_HEADER} names paths among {', '.join(PATHS)}", param=MOCK_HEADER)
    return ((forced,) if forced else None), failing


class MockFailingEdge:
    """The edge as seen by a router when a test wants it to fail: every request is refused as
    if it were overloaded; everything else is the real pool's."""

    def __init__(self, edge: Any) -> None:
        self._edge = edge

    def __getattr__(self, name: str) -> Any:
        return getattr(self._edge, name)

    async def forward(self, kind: Kind, body: Any, stream: bool,
                      deadline: float) -> ServedResponse:
        raise Overloaded(f"mock failure of the edge ({MOCK_HEADER})", retry_after=1)
