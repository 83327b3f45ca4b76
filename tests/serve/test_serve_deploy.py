"""Serving a deploy.yaml (sha256 verified before start), the resource policy refusing or
degrading, traffic sampling into eval JSONL, and `edgepick monitor` against the deploy baseline."""

from __future__ import annotations

import json

import openai
import pytest

from edgepick.evaluate.items import load_eval_set
from edgepick.records.deploy import Baseline, DeployConfig, DeployModel
from edgepick.registry.store import sha256_of
from serve_harness import need_llama_server, serve


def _deploy(tmp_path, model: str, sha: str | None = None):
    cfg = DeployConfig(model=DeployModel(name="tiny-chat", path=model, sha256=sha or sha256_of(model)),
                       baseline=Baseline(ttft_p50_ms=500, ttft_p99_ms=2000, decode_tps=5,
                                         unacceptable_rate=0.5, format_error_rate=0.5))
    cfg.runtime.n_ctx = 512
    return cfg.dump(tmp_path / "deploy.yaml")


def test_deploy_checksum_mismatch_refuses_to_start(cli, tiny_model, tmp_path):
    need_llama_server()
    path = _deploy(tmp_path, tiny_model, sha="0" * 64)
    out = cli("serve", str(path), "--port", "0", timeout=60)
    assert out.returncode == 2
    assert "SHA-256" in out.stderr and "model.sha256" in out.stderr
    assert "Traceback" not in out.stderr


def test_deploy_sampling_and_monitor(cli, tiny_model, tmp_path):
    path = _deploy(tmp_path, tiny_model)
    sampled = tmp_path / "traffic.jsonl"
    with serve([str(path), "--slots", "1", "--sample-rate", "1", "--sample-out", str(sampled)],
               tmp_path) as s:
        client = s.openai("x")
        ids = [m.id for m in client.models.list()]
        assert ids == ["tiny-chat"]
        client.chat.completions.create(model="x", max_tokens=8,
                                       messages=[{"role": "user", "content": "Hello"}])
        client.chat.completions.with_raw_response.create(
            model="x", max_tokens=8, messages=[{"role": "user", "content": "Give JSON"}],
            response_format={"type": "json_object"}, extra_headers={"x-edgepick-task": "extraction"})
        list(client.chat.completions.create(model="x", max_tokens=8, stream=True,
                                            messages=[{"role": "user", "content": "Hi"}]))
        out = cli("monitor", s.url, "--against", str(path), "--json")
        assert out.returncode == 0, out.stderr
        rows = {r["figure"]: r for r in json.loads(out.stdout)["figures"]}
        assert rows["TTFT P50"]["live"] is not None and rows["TTFT P50"]["baseline"] == 500
        assert rows["unacceptable (sampled)"]["n"] == 3
        assert rows["engine memory (RssAnon+VmSwap)"]["live"] > 0
        human = cli("monitor", s.url, "--against", str(path))
        assert "TTFT P99" in human.stdout
    rows = [json.loads(line) for line in sampled.read_text().splitlines()]
    assert len(rows) == 3 and {r["task"] for r in rows} == {"generation", "extraction"}
    assert all(r["meta"]["output"] is not None and r["messages"] for r in rows)
    # eval JSONL whose only gap is the reference answer (no cloud here): it loads, as items eval
    # judges for the reference-free figures (issue 29)
    items, problems = load_eval_set(sampled)
    assert not problems and len(items) == 3 and all(i.reference_free for i in items)


@pytest.mark.parametrize("action", ["refuse", "degrade"])
def test_resource_policy(tiny_model, tmp_path, action):
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"resources: {{min_available_mb: 1.0e12, action: {action}, "
                      "degrade_max_tokens: 3}\n")
    with serve(["-m", tiny_model, "--slots", "1", "--ctx", "512", "--policy", str(policy)],
               tmp_path) as s:
        client = s.openai("x")
        if action == "refuse":
            with pytest.raises(openai.InternalServerError) as exc:
                client.chat.completions.create(model="x", max_tokens=20,
                                               messages=[{"role": "user", "content": "Hi"}])
            assert exc.value.status_code == 503
            assert "available memory" in str(exc.value)
            assert int(exc.value.response.headers["retry-after"]) >= 1
            assert s.metric("edgepick_rejections_total", reason="insufficient_resources") == 1
        else:
            raw = client.chat.completions.with_raw_response.create(
                model="x", max_tokens=20, messages=[{"role": "user", "content": "Hi"}],
                extra_body={"ignore_eos": True})
            assert "available memory" in raw.headers["x-edgepick-degraded"]
            assert raw.parse().usage.completion_tokens <= 3
