"""A team's cascade over N tiers at serve time (issue 38 item 3): deploy.yaml's steps
[tiny, smol, cloud] (the 2-block SmolLM2, SmolLM2-135M, and a stand-in cloud: a llama-server on
the tiny model). With thresholds 1.0 nothing is confident enough and a request ends at the
cloud, two escalations counted; with 0.0 at step 1 the tiny model answers; an edge-only task and
`network: offline` end at smol (under a budget that holds one model, smol evicts tiny), and the
response says why. A step naming an unknown member is
refused when the file loads, in one line."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import yaml

from edgepick.records.deploy import CloudEndpoint, DeployConfig, DeployModel
from edgepick.records.team import Cascade, CascadeStep, EdgeModel
from edgepick.registry.store import sha256_of
from llama_server import llama_server
from serve_harness import serve

STEP = "x-edgepick-cascade-step"


def cascade_deploy(tmp_path: Path, tiny: str, smol: str, cloud: str | None,
                   offline: bool = False) -> Path:
    """`hard` and `private` (edge-only): [tiny 1.0, smol 1.0, cloud]; `easy`: tiny keeps all."""
    t = EdgeModel(name="tiny", path=tiny, sha256=sha256_of(tiny))
    s = EdgeModel(name="smol", path=smol, sha256=sha256_of(smol))
    cfg = DeployConfig(
        schema_version=2, status="team", model=DeployModel(name="tiny", path=tiny,
                                                           sha256=t.sha256),
        models=[t, s], edge_only_tasks=["private"],
        network="offline" if offline else "online",
        cloud=CloudEndpoint(url=cloud, model="cloud") if cloud else None,
        cascades=[Cascade(tasks=["hard", "private"],
                          steps=[CascadeStep(to="tiny", threshold=1.0),
                                 CascadeStep(to="smol", threshold=1.0), CascadeStep(to="cloud")]),
                  Cascade(tasks=["easy"],
                          steps=[CascadeStep(to="tiny", threshold=0.0),
                                 CascadeStep(to="smol", threshold=1.0), CascadeStep(to="cloud")])])
    cfg.runtime.n_ctx = 512
    return cfg.dump(tmp_path / "deploy.yaml")


def ask(url: str, task: str, stream: bool = False) -> tuple[httpx.Response, str]:
    """(the response, its answer text); ignore_eos: every step writes tokens to judge."""
    body = {"model": "x", "max_tokens": 4, "stream": stream, "ignore_eos": True,
            "messages": [{"role": "user", "content": "Is 2 even?"}]}
    r = httpx.post(url + "/v1/chat/completions", headers={"x-edgepick-task": task}, json=body,
                   timeout=120)
    if not stream:
        return r, r.json()["choices"][0]["message"]["content"] if r.status_code == 200 else r.text
    events = [json.loads(x[6:]) for x in r.text.splitlines()
              if x.startswith("data: ") and x != "data: [DONE]"]
    assert not any("error" in e for e in events), events
    return r, "".join((c.get("delta") or {}).get("content") or ""
                      for e in events for c in e.get("choices") or [])


def test_three_tier_cascade_over_a_team(tiny_model, smollm2_q4_1, tmp_path):
    with llama_server(tiny_model, "cloud", tmp_path) as cloud_url:
        path = cascade_deploy(tmp_path, tiny_model, smollm2_q4_1, cloud_url.split("#")[0])
        with serve([str(path), "--slots", "1"], tmp_path) as s:
            for stream in (False, True):  # nothing confident enough: the cloud answers
                r, text = ask(s.url, "hard", stream)
                assert r.status_code == 200 and text, r.text
                h = r.headers
                assert (h["x-edgepick-route"], h[STEP]) == ("cloud-escalated", "3/3")
                assert h["x-edgepick-route-reason"] == "tiny_low_confidence;smol_low_confidence"
                assert "x-edgepick-model" not in h
            esc = "edgepick_cascade_escalations_total"
            assert s.metric(esc) == 4  # two per request
            assert s.metric(esc, step="1/3", model="tiny", reason="low_confidence") == 2
            assert s.metric(esc, step="2/3", model="smol", reason="low_confidence") == 2
            assert s.metric("edgepick_cascade_answers_total", step="3/3", model="cloud") == 2

            r, text = ask(s.url, "easy")  # threshold 0.0 at step 1: tiny keeps its answer
            assert r.status_code == 200 and text
            assert (r.headers["x-edgepick-model"], r.json()["model"]) == ("tiny", "tiny")
            assert (r.headers["x-edgepick-route"], r.headers[STEP]) == ("edge", "1/3")
            assert r.headers["x-edgepick-route-reason"] == "cascade"
            assert 0 < float(r.headers["x-edgepick-confidence"]) <= 1
            assert r.json()["choices"][0].get("logprobs") is None  # not asked for: not shown

            r, _ = ask(s.url, "private")  # edge-only: the last edge step answers
            assert r.status_code == 200 and r.headers["x-edgepick-model"] == "smol"
            assert (r.headers["x-edgepick-route"], r.headers[STEP]) == ("edge-escalated", "2/3")
            assert r.headers["x-edgepick-route-reason"] == \
                "tiny_low_confidence;edge_only:private"
            assert s.metric(esc) == 5


def test_offline_the_cascade_ends_at_the_last_edge_step(tiny_model, smollm2_q4_1, tmp_path):
    path = cascade_deploy(tmp_path, tiny_model, smollm2_q4_1, "http://127.0.0.1:9/v1",
                          offline=True)
    # 69 + 94 MiB files: a budget of 120M holds one model at a time, so smol evicts tiny
    with serve([str(path), "--slots", "1", "--memory-budget", "120M"], tmp_path) as s:
        r, text = ask(s.url, "hard")
        assert r.status_code == 200 and text
        assert (r.headers["x-edgepick-model"], r.json()["model"]) == ("smol", "smol")
        assert (r.headers["x-edgepick-route"], r.headers[STEP]) == ("edge-escalated", "2/3")
        assert r.headers["x-edgepick-route-reason"] == "tiny_low_confidence;offline"
        assert s.metric("edgepick_cascade_escalations_total", step="1/3") == 1
        assert s.metric("edgepick_cascade_answers_total", step="2/3", model="smol") == 1
        assert s.metric("edgepick_model_loads_total", cause="demand") == 2
        assert s.metric("edgepick_model_unloads_total", model="tiny", reason="evicted") == 1


def test_a_step_naming_an_unknown_member_is_refused(tiny_model, smollm2_q4_1, tmp_path, cli):
    path = cascade_deploy(tmp_path, tiny_model, smollm2_q4_1, None)
    data = yaml.safe_load(path.read_text())
    data["cascades"][0]["steps"][1]["to"] = "medium"
    path.write_text(yaml.safe_dump(data))
    out = cli("serve", str(path), "--port", "0", timeout=60)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    line = out.stderr.strip().splitlines()[-1]
    assert "deploy.yaml" in line and "'medium'" in line and "tiny, smol" in line
