"""The loop's endpoints through serve's real app on the stand-in pool (no engine): every answer's
x-request-id names its sampled item, the cloud answers sampled items off the request path (never
an edge-only task's), feedback counts and marks badcases, and /metrics/history serves the
snapshot `monitor --window` reads."""

from __future__ import annotations

import json

import httpx
import pytest

from edgepick.records.deploy import Baseline, CloudEndpoint, DeployConfig, DeployModel
from fake_edge import make_app, running
from loopback_cloud import REFERENCE, RecordingCloud
from serve_harness import wait_until


@pytest.mark.slow  # several CLI runs of monitor: about 40 s on a loaded 2-core host
def test_feedback_references_and_history_through_the_app(cli, tmp_path):
    out = tmp_path / "traffic.jsonl"
    policy = tmp_path / "policy.yaml"
    policy.write_text("sampling:\n  redact:\n    - {pattern: 'secret-\\w+', replace: '[x]'}\n")
    with RecordingCloud() as cloud:
        deploy = DeployConfig(model=DeployModel(name="fake-model", path="/m", sha256="0" * 64),
                              cloud=CloudEndpoint(url=cloud.url, model="cloud"),
                              edge_only_tasks=["summary"])
        app, pool = make_app({"sample_rate": 1.0, "sample_out": out, "policy": policy},
                             deploy=deploy)
        with running(app) as port:
            base = f"http://127.0.0.1:{port}"
            ids = {}
            for task in ("qa", "summary"):
                r = httpx.post(base + "/v1/chat/completions", headers={"x-edgepick-task": task},
                               json={"messages": [{"role": "user",
                                                   "content": f"{task}: my secret-token"}]})
                assert r.status_code == 200, r.text
                ids[task] = r.headers["x-request-id"]
            mine = httpx.post(base + "/v1/chat/completions", headers={"x-request-id": "mine-1"},
                              json={"messages": [{"role": "user", "content": "hi"}]})
            assert mine.headers["x-request-id"] == "mine-1"

            def rows() -> dict:
                return {r["meta"]["request_id"]: r
                        for r in map(json.loads, out.read_text().splitlines())}

            wait_until("references written", lambda: len(rows()) == 3 and not any(
                r["meta"]["reference_pending"] for r in rows().values()), 30)
            got = rows()
            assert got[ids["qa"]]["reference"] == REFERENCE
            assert got[ids["summary"]]["reference"] is None
            assert got[ids["qa"]]["id"] == f"traffic-{ids['qa']}"
            assert "secret-token" not in out.read_text()
            assert len(cloud.bodies) == 2  # qa and the untagged one; never the summary
            assert not any("summary" in json.dumps(b) or "secret-token" in json.dumps(b)
                           for b in cloud.bodies)

            fb = httpx.post(base + "/v1/feedback", json={"request_id": ids["qa"],
                                                         "rating": "down"}).json()
            assert fb == {"request_id": ids["qa"], "rating": "down", "counted": True,
                          "sampled": True, "badcase": True}
            again = httpx.post(base + "/v1/feedback", json={"request_id": ids["qa"],
                                                            "rating": "down"}).json()
            assert again["counted"] is False
            bad = httpx.post(base + "/v1/feedback", content=b"[" * 5000,
                             headers={"content-type": "application/json"})
            assert bad.status_code == 400 and bad.json()["error"]["type"]
            assert "badcase" in rows()[ids["qa"]]["tags"]
            metrics = httpx.get(base + "/metrics").text
            assert 'edgepick_feedback_total{rating="down"} 1.0' in metrics
            assert 'edgepick_badcases_total{source="feedback",task="qa"} 1.0' in metrics
            assert 'edgepick_sample_references_total{outcome="edge_only"} 1.0' in metrics

            hist = httpx.get(base + "/metrics/history", params={"ago": 300})
            assert hist.status_code == 200
            assert float(hist.headers["x-edgepick-snapshot-age-seconds"]) >= 0
            assert 'edgepick_feedback_total{rating="down"}' not in hist.text  # the start one
            assert "/v1/feedback" in httpx.get(base + "/openapi.json").json()["paths"]
            mon = cli("monitor", base, "--json", "--window", "10m")
            assert mon.returncode == 0, mon.stderr
            doc = json.loads(mon.stdout)
            assert doc["window"]["asked_s"] == 600 and doc["window"]["since_start"] is False
            assert doc["window"]["used_s"] < 600  # younger than the window: since its start
            figs = {r["figure"]: r for r in doc["figures"]}
            assert figs["feedback received"]["live"] == 1
            assert figs["badcases (sampled, qa)"]["live"] == 1
            fast = tmp_path / "fast.yaml"
            # one of three sampled items is a badcase (rated down): worse than a decision of none
            deploy.model_copy(update={"baseline": Baseline(badcases_per_1000=0.0)}).dump(fast)
            worse = cli("monitor", base, "--against", str(fast), "--check", "--json")
            assert worse.returncode == 1, worse.stdout + worse.stderr
            assert json.loads(worse.stdout)["worse"] == [
                "badcases (sampled: unacceptable or rated down)"]
            fine = tmp_path / "fine.yaml"
            deploy.model_copy(update={"baseline": Baseline(badcases_per_1000=900.0)}).dump(fine)
            ok = cli("monitor", base, "--against", str(fine), "--check")
            assert ok.returncode == 0, ok.stdout + ok.stderr
            no_deploy = cli("monitor", base, "--check")
            assert no_deploy.returncode == 2 and "--against" in no_deploy.stderr
