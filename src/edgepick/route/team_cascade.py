"""A team's cascade at serve time: a task whose deploy.yaml cascade names
several steps (e.g. small → medium → cloud) goes to the first step's model; below that step's
threshold its answer is handed to the next step, and so on; the last step answers whatever
reaches it ([seed 001 §6.3]: the light model answers when it is confident and hands over when it
is not; [seed 003 §5.2/§6.1]: a small model takes what it can, anything heavier goes elsewhere).

The thresholds are those `route eval` calibrated over the same tiers (route/tiers.py,
`answering_tier`: an answer without a confidence is always handed on). Confidence, the format
validator, the buffered answer and its replay as a stream are the router's own (route/router.py,
the two-tier cascade's); a step's model is the team member its name gives, loaded under the
team's memory rules by its edge (serve/pool/team.py `MemberEdge.member`). A cloud step is left out
when the request may not leave the device (`network: offline`, an `edge_only_tasks` task, a
forced edge) or no cloud is configured: the last edge step then answers, unjudged, and the
route reason says why. A step that fails (overloaded, engine lost) hands on as an unsure one
does; when nothing after it answers, the latest edge answer goes out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter

from edgepick.records.team import CLOUD
from edgepick.route.route_plan import Plan, all_failed, as_client_wants, short_reason
from edgepick.serve.router_api import BadRequest, Routed, RouteRequest, ServeError

STEP_HEADER = "x-edgepick-cascade-step"  # "2/3": the second of the cascade's three steps


@dataclass
class Step:
    name: str  # the member's name, or "cloud"
    edge: Any  # the member's edge; None for the cloud
    threshold: float | None  # keep the answer at or above it; None: the step answers all
    number: int  # 1-based, of `total` (the cascade's steps as deploy.yaml writes them)
    total: int

    @property
    def label(self) -> str:
        return f"{self.number}/{self.total}"


class TeamCascade:
    def __init__(self, router: Any) -> None:
        self.router = router
        self._registry = None
        self.escalations: Any = None
        self.answers: Any = None

    def bind(self, registry: Any) -> None:
        """The cascade's counters, once, on the server's own registry."""
        if self._registry is registry:
            return

        self._registry = registry
        self.escalations = Counter(
            "edgepick_cascade_escalations", "Requests a team cascade step handed on, by step, "
            "model and why (low_confidence, format_invalid, overloaded, ...)",
            ["step", "model", "reason"], registry=registry)
        self.answers = Counter("edgepick_cascade_answers", "Requests a team cascade step "
                               "answered, by step and model", ["step", "model"],
                               registry=registry)

    def steps(self, request: RouteRequest, task: str | None, edge: Any,
              plan: Plan) -> list[Step] | None:
        """The task's cascade over the team's members, starting at `edge` (the member serve
        chose); None when it has none, the client named another model, or the plan does not
        start on the device (cloud first, a forced cloud, an input too long for the edge)."""
        deploy = self.router.deploy
        member = getattr(edge, "member", None)
        if deploy is None or member is None or plan.paths[:1] != ["edge"]:
            return None
        cascade = deploy.cascade_for(task)
        first = member(cascade.steps[0].to) if cascade is not None else None
        if first is None or first.name != edge.name:
            return None
        total = len(cascade.steps)
        out = [Step(edge.name, edge, cascade.steps[0].threshold, 1, total)]
        for i, s in enumerate(cascade.steps[1:], start=2):
            other = None if s.to == CLOUD else member(s.to)
            out.append(Step(other.name if other else CLOUD, other, s.threshold, i, total))
        self.bind(edge.metrics.registry)
        return out

    def no_cloud(self, request: RouteRequest, task: str | None, plan: Plan) -> str:
        """Why the cloud step is not used for this request ("" when it is)."""
        deploy = self.router.deploy
        if task is not None and task in deploy.edge_only_tasks:
            return f"edge_only:{task}"
        if deploy.network == "offline":
            return "offline"
        if "cloud" not in plan.paths:
            return "forced" if plan.reason == "forced" else "edge_only"
        return "no_cloud" if self.router.cloud is None else ""

    async def run(self, request: RouteRequest, body: dict, edge_body: dict, steps: list[Step],
                  plan: Plan) -> Routed:
        why_not = self.no_cloud(request, plan.task, plan)
        if why_not:
            steps = [s for s in steps if s.edge is not None]
        handed: list[str] = []
        failures: list[tuple[str, ServeError]] = []
        held: tuple[Any, Step] | None = None  # the latest edge answer, unsure
        for i, step in enumerate(steps):
            last = i == len(steps) - 1
            try:
                if step.edge is None:
                    resp = await self.router._cloud(request, body, plan)
                    if held and "x-edgepick-confidence" in held[0].headers:
                        resp.headers["x-edgepick-confidence"] = held[0].headers[
                            "x-edgepick-confidence"]
                    return self._answered(resp, step, handed)
                if last or not self.router.buffers(request):
                    resp, unsure = await self.router.straight(request, edge_body, step.edge), ""
                else:
                    resp, unsure = await self.router.judged(request, edge_body, step.edge,
                                                            step.threshold)
            except ServeError as exc:
                if isinstance(exc, BadRequest):
                    raise
                failures.append((step.name, exc))
                why = f"cloud_failed:{short_reason(exc)}" if step.edge is None else short_reason(exc)
                self._hand_on(step, why, handed)
                continue
            if not unsure:
                if last and why_not:  # it answers because the cloud step is left out
                    handed.append(why_not)
                return self._answered(await as_client_wants(resp, request), step, handed)
            self._hand_on(step, unsure, handed)
            held = (resp, step)
        if held is not None:  # nothing after it answered: the latest edge answer goes out
            resp, step = held
            return self._answered(await as_client_wants(resp, request), step, handed)
        raise all_failed(failures)

    def _hand_on(self, step: Step, why: str, handed: list[str]) -> None:
        handed.append(why if why.startswith("cloud_failed") else f"{step.name}_{why}")
        if step.edge is not None:
            self.escalations.labels(step.label, step.name, why).inc()

    def _answered(self, resp: Any, step: Step, handed: list[str]) -> Routed:
        self.answers.labels(step.label, step.name).inc()
        resp.headers[STEP_HEADER] = step.label
        if step.edge is None:
            return Routed(resp, "cloud-escalated", ";".join(handed))
        return Routed(resp, "edge-escalated" if step.number > 1 else "edge",
                      ";".join(handed) or "cascade")
