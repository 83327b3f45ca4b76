"""deploy.yaml's privacy and network rules in serve's router (issue 26 item 5), against a real
cloud: a second llama-server on loopback whose own counters show whether a request reached it.
Each case would leak a request to that cloud without the rule: the deploy routes the task to the
cloud, the edge is made to fail, the cascade is unsure, or the test forces the cloud."""

from __future__ import annotations

import httpx
import pytest
import yaml

from llama_server import llama_server
from serve_harness import serve, wait_until

from edgepick.records.deploy import CloudEndpoint, DeployConfig, DeployModel, TaskRoute
from edgepick.registry.store import sha256_of

MSG = [{"role": "user", "content": "Say hello."}]
EDGE = ["--slots", "1", "--queue", "0", "--threads", "1"]


def cloud_work(cloud_v1: str) -> float:
    """Tokens the cloud llama-server has processed or written: grows with every request."""
    text = httpx.get(cloud_v1.removesuffix("/v1") + "/metrics", timeout=10).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith(("llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total")):
            total += float(line.split()[-1])
    return total


def deploy(tmp_path, model: str, cloud_v1: str, **fields) -> str:
    cfg = DeployConfig(status="hybrid", model=DeployModel(name="tiny", path=model,
                                                          sha256=sha256_of(model)),
                       routes=[TaskRoute(task="notes", route="cloud"),
                               TaskRoute(task="summary", route="cloud")],
                       cloud=CloudEndpoint(url=cloud_v1), **fields)
    cfg.runtime.n_ctx = 512
    return str(cfg.dump(tmp_path / "deploy.yaml"))


def policy(tmp_path, cloud_v1: str, **route) -> str:
    calm = tmp_path / "calm.yaml"
    calm.write_text("battery_percent: 80\non_ac: true\ntemperature_c: 40\nmemory_pressure: 0\n")
    section = {"mode": "by_task", "allow_forced_route": True, "signals_file": str(calm),
               "escalate_low_confidence": False,
               "cloud": {"url": cloud_v1, "first_chunk_timeout_s": 20.0, "timeout_s": 60.0},
               "network": {"probe_timeout_s": 2.0, "probe_interval_s": 0.3}, **route}
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump({"route": section}))
    return str(path)


def ask(s, task: str, headers: dict | None = None, stream: bool = False,
        max_tokens: int = 4) -> httpx.Response:
    h = {"x-edgepick-task": task, **(headers or {})}
    return httpx.post(s.v1 + "/chat/completions", headers=h, timeout=120, json={
        "messages": MSG, "max_tokens": max_tokens, "stream": stream})


@pytest.fixture(scope="module")
def cloud(tiny_model, tmp_path_factory):
    with llama_server(tiny_model, "cloud", tmp_path_factory.mktemp("cloud"), parallel=2,
                      extra=["--metrics"]) as url:
        yield url.split("#")[0]


def test_edge_only_tasks_never_reach_the_cloud(tiny_model, tmp_path, cloud):
    dep = deploy(tmp_path, tiny_model, cloud, edge_only_tasks=["notes"])
    with serve([dep, *EDGE, "--policy", policy(tmp_path, cloud)], tmp_path) as s:
        before = cloud_work(cloud)
        r = ask(s, "summary")  # the rule's control: a task routed to the cloud gets there
        assert r.status_code == 200 and r.headers["x-edgepick-route"] == "cloud", r.text
        assert cloud_work(cloud) > before
        before = cloud_work(cloud)
        r = ask(s, "notes")  # routed to the cloud by the deploy, but private
        assert r.status_code == 200 and r.headers["x-edgepick-route"] == "edge", r.text
        assert r.headers["x-edgepick-route-reason"] == "edge_only:notes"
        for headers in ({"x-edgepick-mock-failure": "edge"},  # the edge fails
                        {"x-edgepick-force-route": "cloud"}):  # a test forces the cloud
            for stream in (False, True):
                r = ask(s, "notes", headers, stream)
                assert r.status_code == 503, (headers, r.text)
                err = r.json()["error"]
                assert err["code"] == "edge_only_task_unavailable" and "notes" in err["message"]
                assert "edge_only_tasks" in err["message"]
        assert cloud_work(cloud) == before, "an edge-only request reached the cloud"


def test_a_cascade_never_escalates_an_edge_only_task(tiny_model, tmp_path, cloud):
    dep = deploy(tmp_path, tiny_model, cloud, edge_only_tasks=["notes"])
    unsure = policy(tmp_path, cloud, mode="cascade", confidence={"threshold": 0.999})
    with serve([dep, *EDGE, "--policy", unsure], tmp_path) as s:
        r = ask(s, "chat")  # control: the unsure edge escalates an ordinary task
        assert r.headers["x-edgepick-route"] == "cloud-escalated", r.headers
        before = cloud_work(cloud)
        for stream in (False, True):
            r = ask(s, "notes", stream=stream)
            assert r.status_code == 200 and r.headers["x-edgepick-route"] == "edge"
        assert cloud_work(cloud) == before


def test_network_offline_means_no_cloud_at_all(tiny_model, tmp_path, cloud, cli):
    dep = deploy(tmp_path, tiny_model, cloud, network="offline")
    with serve([dep, *EDGE, "--policy", policy(tmp_path, cloud)], tmp_path) as s:
        before = cloud_work(cloud)
        r = ask(s, "summary")  # the deploy's route says cloud; offline says no
        assert r.status_code == 200 and r.headers["x-edgepick-route"].startswith("edge")
        r = ask(s, "summary", {"x-edgepick-mock-failure": "edge"})
        assert r.status_code == 429  # the edge's own refusal: there is nowhere else to go
        r = ask(s, "summary", {"x-edgepick-force-route": "cloud"})
        assert r.status_code == 503 and "offline" in r.json()["error"]["message"]
        assert cloud_work(cloud) == before
    out = cli("serve", dep, "--cloud", cloud, "--port", "0", timeout=60)
    assert out.returncode != 0 and "network: offline" in out.stderr
    assert "Traceback" not in out.stderr
    wait_until("cloud still idle", lambda: cloud_work(cloud) == before, 5)
