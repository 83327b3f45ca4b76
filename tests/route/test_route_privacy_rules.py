"""deploy.yaml's privacy and network rules through the real edge/cloud router, on a stand-in edge
and a counting stand-in cloud (no engine needed; test_route_privacy.py does the same against
llama-server): an edge-only task is never sent to the cloud on a route, a failure, a cascade or a
forced header, and under `network: offline` no router gets a cloud."""

from __future__ import annotations

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from fake_edge import chat_body, make_app, running

from edgepick.errors import EdgepickError
from edgepick.records.deploy import CloudEndpoint, DeployConfig, DeployModel, TaskRoute
from edgepick.serve.assemble import load_router
from edgepick.serve.pool.policy_file import ServePolicy

MSG = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


@pytest.fixture
def cloud():
    app = FastAPI()
    app.state.calls = 0

    @app.get("/v1/models")
    async def models() -> dict:
        return {"object": "list", "data": [{"id": "cloud", "object": "model"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> dict:
        app.state.calls += 1
        return chat_body("from the cloud")

    with running(app) as port:
        app.url = f"http://127.0.0.1:{port}/v1"
        yield app


def _deploy(cloud_url: str, **fields) -> DeployConfig:
    return DeployConfig(status="hybrid", model=DeployModel(name="m", path="/m.gguf", sha256="0"),
                        routes=[TaskRoute(task="notes", route="cloud"),
                                TaskRoute(task="summary", route="cloud")],
                        cloud=CloudEndpoint(url=cloud_url), **fields)


def _serve(deploy: DeployConfig, **route):
    section = {"mode": "by_task", "allow_forced_route": True, "escalate_low_confidence": False,
               "network": {"probe_timeout_s": 2.0, "probe_interval_s": 0.2}, **route}
    policy = ServePolicy(route=section)
    router = load_router(policy, deploy)
    return make_app(router=router, deploy=deploy, test_headers=True)


def ask(c, task: str, **headers):
    return c.post("/v1/chat/completions", json=MSG,
                  headers={"x-edgepick-task": task, **headers})


def test_edge_only_tasks_stay_home(cloud):
    app, pool = _serve(_deploy(cloud.url, edge_only_tasks=["notes"]))
    with TestClient(app) as c:
        r = ask(c, "summary")  # control: the rule's absence sends it to the cloud
        assert r.headers["x-edgepick-route"] == "cloud" and cloud.state.calls == 1
        r = ask(c, "notes")
        assert r.status_code == 200 and r.headers["x-edgepick-route"] == "edge"
        assert r.headers["x-edgepick-route-reason"] == "edge_only:notes"
        for headers in ({"x-edgepick-mock-failure": "edge"},
                        {"x-edgepick-force-route": "cloud"},
                        {"x-edgepick-mock-failure": "edge,cloud"}):
            r = ask(c, "notes", **headers)
            assert r.status_code == 503, r.text
            assert r.json()["error"]["code"] == "edge_only_task_unavailable"
        from edgepick.serve.errors import Overloaded

        pool.fail_with = Overloaded("server busy", retry_after=2)  # the edge overloaded
        r = ask(c, "notes")
        assert r.status_code == 503 and "edge cannot serve it now" in r.json()["error"]["message"]
        assert r.headers["retry-after"] == "2"
        assert ask(c, "summary").headers["x-edgepick-route"] == "cloud"  # the control again
        assert cloud.state.calls == 2
        pool.fail_with = None
        r = c.post("/v1/chat/completions", json=dict(MSG, metadata={"task": "notes"}),
                   headers={"x-edgepick-mock-failure": "edge"})
        assert r.status_code == 503  # the task named in the body counts too
        assert cloud.state.calls == 2


def test_a_cascade_keeps_edge_only_tasks(cloud):
    app, pool = _serve(_deploy(cloud.url, edge_only_tasks=["notes"]), mode="cascade",
                       confidence={"threshold": 0.999})
    with TestClient(app) as c:
        r = ask(c, "other")  # the stand-in edge sends no log-probabilities: unsure, escalated
        assert r.headers["x-edgepick-route"] == "cloud-escalated" and cloud.state.calls == 1
        r = ask(c, "notes")
        assert r.status_code == 200 and r.headers["x-edgepick-route"] == "edge"
        assert cloud.state.calls == 1


def test_network_offline_gives_no_router_a_cloud(cloud):
    deploy = _deploy(cloud.url, network="offline")
    app, pool = _serve(deploy, cloud={"url": cloud.url})
    with TestClient(app) as c:
        r = ask(c, "summary")
        assert r.status_code == 200 and r.headers["x-edgepick-route"].startswith("edge")
        assert ask(c, "summary", **{"x-edgepick-mock-failure": "edge"}).status_code == 429
        r = ask(c, "summary", **{"x-edgepick-force-route": "cloud"})
        assert r.status_code == 503 and "offline" in r.json()["error"]["message"]
    assert cloud.state.calls == 0
    from edgepick.serve.settings import ServeSettings

    with pytest.raises(EdgepickError, match="network: offline"):
        load_router(ServePolicy(), deploy, ServeSettings(cloud=cloud.url + "#cloud"))
