"""A team's cascade (route/team_cascade.py) with stand-in members: a failing step hands on, the
latest edge answer goes out when the cloud fails, `decide_first` streams from step 1 unjudged,
and a request naming another member is not cascaded. The real engines: tests/serve/
test_serve_team_cascade.py."""

from __future__ import annotations

import asyncio
import math

from prometheus_client import CollectorRegistry

from edgepick.records.deploy import CloudEndpoint, DeployConfig, DeployModel
from edgepick.records.team import Cascade, CascadeStep, EdgeModel
from edgepick.route.route_policy import policy_from
from edgepick.route.router import EdgeCloudRouter, Plan
from edgepick.serve.router_api import Overloaded, RouteRequest, ServedResponse

TOKEN = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\n'


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()  # one a server, as serve's


class Member:
    """A team member's edge answering with the given confidence, or failing."""

    def __init__(self, team: dict, name: str, conf: float | None) -> None:
        self.team, self.name, self.conf, self.calls = team, name, conf, 0
        self.metrics = team.setdefault("", Metrics())
        team[name] = self

    def member(self, route: str) -> "Member | None":
        return self.team.get(route)

    async def forward(self, kind, body, stream, deadline) -> ServedResponse:
        self.calls += 1
        if self.conf is None:
            raise Overloaded("busy", retry_after=1)
        if stream:
            async def chunks():
                yield TOKEN

            return ServedResponse(chunks=chunks(), headers={"x-edgepick-model": self.name})
        lp = [{"token": "a", "logprob": math.log(self.conf)}] * 2
        return ServedResponse(body={"model": self.name, "choices": [{
            "message": {"role": "assistant", "content": self.name}, "logprobs": {"content": lp}}]},
            headers={"x-edgepick-model": self.name})


def run(confs: dict, *, stream: bool = False, policy: dict | None = None, first: str = "tiny",
        mock_cloud: bool = True):
    team: dict = {}  # the members by name, and "" their registry
    for name, conf in confs.items():
        Member(team, name, conf)
    models = [EdgeModel(name=n, path=f"/m/{n}.gguf", sha256=n) for n in confs]
    deploy = DeployConfig(schema_version=2, model=DeployModel(name="tiny", path="/m/tiny.gguf",
                                                              sha256="tiny"),
                          models=models, cloud=CloudEndpoint(url="http://127.0.0.1:9/v1"),
                          cascades=[Cascade(steps=[CascadeStep(to="tiny", threshold=0.5),
                                                   CascadeStep(to="smol", threshold=0.5),
                                                   CascadeStep(to="cloud")])])
    router = EdgeCloudRouter(policy_from({"mode": "by_task", "cloud": deploy.cloud.model_dump(),
                                          **(policy or {})}), deploy)
    request = RouteRequest("chat", {"messages": [{"role": "user", "content": "hi"}]}, stream,
                           deadline=1e18)
    plan = Plan(["edge", "cloud"], "task:default", mock={"cloud"} if mock_cloud else set())

    async def go():
        steps = router.tiers.steps(request, None, team[first], plan)
        if steps is None:
            return None
        routed = await router.tiers.run(request, request.body, request.body, steps, plan)
        if routed.response.chunks is not None:
            routed.response.body = {"chunks": [c async for c in routed.response.chunks]}
        await router.aclose()
        return routed
    return asyncio.run(go()), team


def test_the_cloud_failing_the_latest_edge_answer_goes_out():
    routed, team = run({"tiny": 0.2, "smol": 0.3})
    assert (routed.route, routed.response.headers["x-edgepick-cascade-step"]) == \
        ("edge-escalated", "2/3")
    assert routed.reason == "tiny_low_confidence;smol_low_confidence;cloud_failed:mock"
    assert routed.response.body["model"] == "smol"
    assert "logprobs" not in routed.response.body["choices"][0]  # not asked for: not shown


def test_a_failing_step_hands_on_and_the_next_keeps_its_answer():
    routed, team = run({"tiny": None, "smol": 0.9})
    assert (routed.route, routed.reason) == ("edge-escalated", "tiny_overloaded")
    assert routed.response.headers["x-edgepick-confidence"] == "0.9000"
    esc = team[""].registry.get_sample_value
    assert esc("edgepick_cascade_escalations_total",
               {"step": "1/3", "model": "tiny", "reason": "overloaded"}) >= 1


def test_decide_first_streams_from_step_one_unjudged():
    routed, team = run({"tiny": 0.01, "smol": 0.9}, stream=True,
                       policy={"stream_cascade": "decide_first"})
    assert (routed.route, routed.reason) == ("edge", "cascade")
    assert routed.response.body == {"chunks": [TOKEN]} and team["smol"].calls == 0
    # buffered (the default): judged, handed on, the kept answer replayed as a stream
    routed, team = run({"tiny": 0.01, "smol": 0.9}, stream=True)
    assert (routed.route, routed.reason) == ("edge-escalated", "tiny_low_confidence")
    assert routed.response.body["chunks"][-1] == b"data: [DONE]\n\n"


def test_a_request_naming_another_member_is_not_cascaded():
    assert run({"tiny": 0.2, "smol": 0.3}, first="smol")[0] is None
