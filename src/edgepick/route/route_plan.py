"""A route's plan (the paths to try, in order) and how an answer or a failure along it reads:
the route label, the reason, the refusal when every path failed, and a judged answer replayed as
the stream the client asked for. Shared by the edge/cloud router (route/router.py) and the
team's cascade (route/team_cascade.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from edgepick.route.answers import replay_stream
from edgepick.route.cloud import CloudError
from edgepick.serve.router_api import EngineUnavailable, RouteRequest, ServedResponse, ServeError


class AllPathsFailed(ServeError):
    code = "all_routes_failed"


@dataclass
class Plan:
    paths: list[str]  # in the order to try
    reason: str
    first_is_fallback: bool = False  # the edge goes first only because the cloud is off
    task: str | None = None
    mock: set[str] = field(default_factory=set)


def route_label(path: str, i: int, plan: Plan) -> str:
    if path == "edge":
        return "edge-fallback" if i > 0 or plan.first_is_fallback else "edge"
    return "cloud-escalated" if i > 0 else "cloud"


def short_reason(exc: ServeError) -> str:
    if isinstance(exc, CloudError):
        return exc.why
    return {"overloaded": "overloaded", "insufficient_resources": "resources",
            "engine_unavailable": "unavailable", "deadline_exceeded": "deadline"}.get(
        exc.label, f"http_{exc.status}")


def why_failed(failures: list[tuple[str, ServeError]]) -> str:
    return ";".join(f"{p}_{short_reason(e)}" for p, e in failures) or "fallback"


def all_failed(failures: list[tuple[str, ServeError]]) -> ServeError:
    if not failures:
        return EngineUnavailable("no path allowed for this request", retry_after=2)
    detail = "; ".join(f"{p}: {e.message} ({e.status})" for p, e in failures)
    edge_err = next((e for p, e in failures if p == "edge"), None)
    status = edge_err.status if edge_err is not None else 502
    retry = edge_err.retry_after if edge_err is not None else None
    return AllPathsFailed(f"every allowed path failed — {detail}", status=status,
                          retry_after=retry)


async def as_client_wants(resp: ServedResponse, request: RouteRequest) -> ServedResponse:
    """A buffered (judged) edge answer replayed as a stream when the client asked for one."""
    if request.stream and resp.chunks is None and resp.body is not None:
        return ServedResponse(chunks=replay_stream(request.kind, resp.body), headers=resp.headers,
                              queue_wait_s=resp.queue_wait_s)
    return resp
