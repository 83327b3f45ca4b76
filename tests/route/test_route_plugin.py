"""The router contract from outside `src/` (issue 23 item 4): a router package written here,
registered under the `edgepick.routers` entry point group by a dist-info folder on sys.path, is
named by a policy file, validates its own section, and routes through serve, which applies the
test headers and the deploy's edge-only rule to it as to every router."""

from __future__ import annotations

import textwrap

import pytest
from fastapi.testclient import TestClient

from fake_edge import make_app

from edgepick.errors import EdgepickError, InputError
from edgepick.records.deploy import DeployConfig, DeployModel
from edgepick.serve.assemble import forced_routes_allowed, load_router
from edgepick.serve.pool.policy_file import ServePolicy

PLUGIN = '''
from pydantic import BaseModel, ConfigDict, ValidationError

from edgepick.errors import InputError
from edgepick.serve.router_api import Routed


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    router: str
    label: str = "plugin"
    allow_forced_route: bool = False


class LabelRouter:
    """Everything on the edge, under its own label; it never heard of the test headers."""

    def __init__(self, section):
        self.section = section
        self.calls = 0

    async def route(self, request, edge):
        self.calls += 1
        resp = await edge.forward(request.kind, request.body, request.stream, request.deadline)
        return Routed(resp, "edge", self.section.label)

    async def aclose(self):
        return None


def make(section, deploy):
    try:
        return LabelRouter(Section.model_validate(section or {"router": "labelled"}))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError("<policy>", err["msg"], field="route." + ".".join(map(str, err["loc"])))
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    pkg = tmp_path / "label_router"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(PLUGIN)
    info = tmp_path / "label_router-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: label-router\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [edgepick.routers]
        labelled = label_router:make
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_router_from_outside_src_routes_through_serve(plugin):
    policy = ServePolicy(route={"router": "labelled", "label": "mine",
                                "allow_forced_route": True})
    router = load_router(policy, None)
    assert type(router).__name__ == "LabelRouter" and router.section.label == "mine"
    with pytest.raises(InputError, match="route.colour"):
        load_router(ServePolicy(route={"router": "labelled", "colour": "red"}), None)
    with pytest.raises(EdgepickError, match="did you mean 'labelled'"):
        load_router(ServePolicy(route={"router": "labeled"}), None)

    deploy = DeployConfig(model=DeployModel(name="m", path="/m.gguf", sha256="0"),
                          edge_only_tasks=["notes"])
    app, pool = make_app(router=router, deploy=deploy, test_headers=forced_routes_allowed(policy))
    with TestClient(app) as c:
        msg = {"messages": [{"role": "user", "content": "hi"}]}
        r = c.post("/v1/chat/completions", json=msg)
        assert r.status_code == 200 and r.headers["x-edgepick-route-reason"] == "mine"
        # serve makes the edge fail for this router too, which knows nothing of the header
        r = c.post("/v1/chat/completions", json=msg, headers={"x-edgepick-mock-failure": "edge"})
        assert r.status_code == 429 and "mock failure" in r.json()["error"]["message"]
        r = c.post("/v1/chat/completions", json=msg,
                   headers={"x-edgepick-mock-failure": "edge", "x-edgepick-task": "notes"})
        assert r.status_code == 503
        assert r.json()["error"]["code"] == "edge_only_task_unavailable"
        r = c.post("/v1/chat/completions", json=msg,
                   headers={"x-edgepick-force-route": "cloud", "x-edgepick-task": "notes"})
        assert r.status_code == 503 and router.calls == 3  # refused before the router
        r = c.post("/v1/chat/completions", json=msg, headers={"x-edgepick-force-route": "moon"})
        assert r.status_code == 400 and r.json()["error"]["param"] == "x-edgepick-force-route"
    assert len(pool.seen) == 1


def test_test_headers_are_ignored_unless_the_policy_allows_them(plugin):
    router = load_router(ServePolicy(route={"router": "labelled"}), None)
    app, pool = make_app(router=router)
    with TestClient(app) as c:
        r = c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]},
                   headers={"x-edgepick-mock-failure": "edge"})
        assert r.status_code == 200
