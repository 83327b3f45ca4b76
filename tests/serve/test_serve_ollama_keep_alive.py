"""Ollama's keep_alive on a team's residency, against a real `edgepick serve` of two models
(SmolLM2 and its 2-block cut, which load in well under a second): a duration unloads the model
once idle for it, 0 unloads it, -1 pins it, each visible in /api/ps and /metrics; under a budget
that holds one model at a time a pin would leave the other unservable, so it is not granted and
the answer says what was done instead, and the budget holds."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest

from edgepick.records.deploy import DeployConfig, DeployModel
from edgepick.records.team import EdgeModel, MemoryPlan
from edgepick.registry.store import sha256_of
from serve_harness import serve, wait_until

MIB = 1 << 20


def _deploy(tmp: Path, smol: str, tiny: str, budget_mib: int) -> Path:
    s = EdgeModel(name="smol", path=smol, sha256=sha256_of(smol), need_bytes=150 * MIB)
    t = EdgeModel(name="tiny", path=tiny, sha256=sha256_of(tiny), need_bytes=50 * MIB)
    cfg = DeployConfig(schema_version=2, status="team",
                       model=DeployModel(name="smol", path=smol, sha256=s.sha256),
                       models=[s, t], memory=MemoryPlan(budget_bytes=budget_mib * MIB))
    cfg.runtime.n_ctx = 512
    return cfg.dump(tmp / "deploy.yaml")


def _ask(url: str, model: str, keep_alive=None, prompt: str = "Hi") -> httpx.Response:
    body = {"model": model, "prompt": prompt, "stream": False, "options": {"num_predict": 2}}
    if keep_alive is not None:
        body["keep_alive"] = keep_alive
    r = httpx.post(url + "/api/generate", json=body, timeout=120)
    assert r.status_code == 200, r.text
    return r


def _ps(url: str) -> dict[str, dict]:
    return {m["model"]: m for m in httpx.get(url + "/api/ps", timeout=10).json()["models"]}


@pytest.fixture(scope="module")
def one_at_a_time(smollm2_q4_1, tiny_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ollama_keep_tight")
    with serve([str(_deploy(tmp, smollm2_q4_1, tiny_model, 180)), "--threads", "1"], tmp) as s:
        yield s


def test_a_pin_that_would_break_the_budget_is_not_granted_and_said(one_at_a_time):
    s = one_at_a_time
    r = _ask(s.url, "smol", keep_alive=-1)
    said = r.headers["x-edgepick-keep-alive"]
    assert "not pinned" in said and "budget" in said and r.json()["keep_alive"] == said
    assert _ps(s.url)["smol"]["pinned"] is False
    assert s.metric("edgepick_model_pinned", model="smol") == 0
    _ask(s.url, "tiny")  # the budget holds one: smol makes room, as it would not pinned
    assert set(_ps(s.url)) == {"tiny"}
    assert s.metric("edgepick_model_unloads_total", model="smol", reason="evicted") >= 1


def test_a_duration_expires_and_zero_unloads(one_at_a_time):
    s = one_at_a_time
    _ask(s.url, "tiny", keep_alive="1s")
    assert "tiny" in _ps(s.url)
    wait_until("tiny unloaded after 1 s idle", lambda: "tiny" not in _ps(s.url), 20)
    assert s.metric("edgepick_model_resident", model="tiny") == 0
    assert s.metric("edgepick_model_unloads_total", model="tiny", reason="idle") >= 1
    # Ollama's load and unload requests: nothing to generate
    load = _ask(s.url, "smol", prompt="", keep_alive="5m").json()
    assert load["done_reason"] == "load" and "smol" in _ps(s.url)
    expires = datetime.fromisoformat(_ps(s.url)["smol"]["expires_at"])
    assert timedelta(minutes=4) < expires - datetime.now(timezone.utc) <= timedelta(minutes=5)
    unload = _ask(s.url, "smol", prompt="", keep_alive=0).json()
    assert unload["done_reason"] == "unload" and _ps(s.url) == {}
    assert s.metric("edgepick_model_unloads_total", model="smol", reason="keep_alive") == 1
    assert s.metric("edgepick_model_resident", model="smol") == 0


def test_minus_one_pins_within_the_budget(smollm2_q4_1, tiny_model, tmp_path):
    with serve([str(_deploy(tmp_path, smollm2_q4_1, tiny_model, 400)), "--threads", "1"],
               tmp_path) as s:
        _ask(s.url, "tiny", keep_alive="1s")
        r = _ask(s.url, "tiny", keep_alive="-1")
        assert "x-edgepick-keep-alive" not in r.headers
        ps = _ps(s.url)["tiny"]
        assert ps["pinned"] is True and ps["expires_at"] > "2200"
        assert s.metric("edgepick_model_pinned", model="tiny") == 1
        _ask(s.url, "smol", keep_alive="1s")
        wait_until("smol unloaded after 1 s idle", lambda: "smol" not in _ps(s.url), 20)
        assert "tiny" in _ps(s.url)  # pinned: still loaded long after its 1 s
        assert s.metric("edgepick_model_unloads_total", model="tiny") == 0
        # a pinned model is not unloaded by 0 while pinned... until a duration unpins it
        _ask(s.url, "tiny", keep_alive="1s")
        assert _ps(s.url)["tiny"]["pinned"] is False
        wait_until("tiny unloaded once unpinned", lambda: "tiny" not in _ps(s.url), 20)
