"""The loop of issue 29 on a real server (the tiny model) and a loopback cloud: sampled traffic
gets cloud references (never for an edge-only task), feedback counts and marks badcases,
`run --traffic` decides on those items, a drift makes `monitor --check` fail and the generated
rules pass promtool; and the engine killed with SIGKILL shows in /metrics and `monitor`."""

from __future__ import annotations

import json
import os
import random
import signal

import httpx
import psutil
import pytest
import yaml

from edgepick.records.deploy import (Baseline, CloudEndpoint, DeployConfig, DeployModel, Gate,
                                     TaskRoute)
from edgepick.registry.store import sha256_of
from loopback_cloud import REFERENCE, RecordingCloud
from promtool_tool import promtool, write_test
from serve_harness import serve, wait_until

EDGE_ONLY = "summary"


def _deploy(tmp_path, model: str, cloud_url: str | None = None):
    cfg = DeployConfig(
        model=DeployModel(name="tiny-chat", path=model, sha256=sha256_of(model)),
        cloud=CloudEndpoint(url=cloud_url, model="cloud") if cloud_url else None,
        edge_only_tasks=[EDGE_ONLY],
        routes=[TaskRoute(task="generation", share=0.8), TaskRoute(task=EDGE_ONLY, share=0.2)],
        gates=[Gate(metric="unacceptable_rate", value=0.0, low=0.0, high=0.1, limit=0.1,
                    verdict="pass"),
               Gate(metric="ttft_p99_ms", limit=5000, verdict="pass")],
        baseline=Baseline(unacceptable_rate=0.02, peak_memory_bytes=2**30))
    cfg.runtime.n_ctx = 512
    return cfg.dump(tmp_path / "deploy.yaml")


def _engine_pid(served) -> int:
    for child in psutil.Process(served.proc.pid).children(recursive=True):
        try:
            if "--port" in child.cmdline():
                return child.pid
        except psutil.Error:
            continue
    raise AssertionError("no engine child")


def test_engine_killed_by_sigkill_is_counted_with_availability_and_peak(cli, tiny_model,
                                                                         tmp_path):
    from edgepick.serve.availability import cgroup_oom_kills, kernel_oom_killed

    path = _deploy(tmp_path, tiny_model)
    with serve([str(path), "--slots", "1"], tmp_path) as s:
        httpx.post(s.v1 + "/chat/completions", timeout=60, json={
            "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}).raise_for_status()
        pid = _engine_pid(s)
        readable = cgroup_oom_kills(pid) is not None or kernel_oom_killed(pid) is not None
        wait_until("peak memory sampled", lambda: s.metric("edgepick_engine_peak_memory_bytes") > 0)
        os.kill(pid, signal.SIGKILL)
        wait_until("the crash counted", lambda: s.metric("edgepick_engine_restarts_total",
                                                         reason="crash") == 1)
        wait_until("the exit classified", lambda: s.metric("edgepick_engine_exits_total",
                                                           signal="SIGKILL") == 1)
        wait_until("ready again", lambda: s.metric("edgepick_ready") == 1, 120)
        # not an OOM when the cgroup's counter did not rise and the kernel log does not name
        # the engine; suspected when neither is readable
        assert s.metric("edgepick_engine_oom_kills_total", evidence="cgroup") == 0
        assert s.metric("edgepick_engine_oom_kills_total", evidence="kernel") == 0
        assert s.metric("edgepick_engine_oom_kills_total", evidence="none") == (0 if readable
                                                                                 else 1)
        up, ready = s.metric("edgepick_uptime_seconds_total"), s.metric("edgepick_ready_seconds_total")
        assert 0 < ready < up
        out = cli("monitor", s.url, "--json", "--window", "since-start", "--against", str(path))
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        rows = {r["figure"]: r for r in doc["figures"]}
        assert doc["window"]["since_start"] is True
        assert rows["engine killed by SIGKILL"]["live"] == 1
        assert rows["engine crashes"]["live"] == 1 and rows["crash rate"]["live"] > 0
        assert rows["OOM kills"]["live"] == (0 if readable else 1)
        assert 0 < rows["availability (time ready)"]["live"] < 1
        assert rows["peak engine memory since start"]["live"] > 0
        assert rows["peak engine memory since start"]["baseline"] == 2**30


def _fires_on(tmp_path, rules, before: str, after: str) -> None:
    """`promtool test rules`: the sampled-output counters held at `before` for 30 minutes, then
    at `after`: the unacceptable alert is quiet before the drift and fires after it."""
    from edgepick.monitor.live import parse

    a, b = parse(before), parse(after)
    series = []
    for verdict in ("ok", "unacceptable"):
        va = a.total("edgepick_sampled_outputs_total", verdict=verdict)
        vb = b.total("edgepick_sampled_outputs_total", verdict=verdict)
        series.append({"series": f'edgepick_sampled_outputs_total{{verdict="{verdict}"}}',
                       "values": f"{va:g}x30 {vb:g}x30"})
    doc = yaml.safe_load(rules.read_text())["groups"][0]["rules"]
    rule = next(r for r in doc if r["alert"] == "EdgepickSampledUnacceptableHigh")
    test = write_test(tmp_path / "drift_test.yaml", [{
        "interval": "1m", "input_series": series, "alert_rule_test": [
            {"eval_time": "25m", "alertname": rule["alert"], "exp_alerts": []},
            {"eval_time": "45m", "alertname": rule["alert"], "exp_alerts": [
                {"exp_labels": rule["labels"], "exp_annotations": rule["annotations"]}]}]}],
        rule_files=[rules.name], interval="1m")
    r = promtool("test", "rules", test.name, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def _sampled_indices(seed: int, n: int, rate: float) -> list[int]:
    rng = random.Random(seed)
    return [i for i in range(n) if rng.random() < rate]


def _plan(tmp_path, model: str):
    plan = {"name": "loop", "device": "raspberry-pi-5", "output": str(tmp_path / "out"),
            "candidates": [{"model": model, "label": "tiny-f16"}],
            "runtime": {"threads": 2, "n_ctx": 512},
            "bench": {"prompt_lengths": [32], "gen_tokens": 8, "warmup": 0, "repeats": 1,
                      "sustain_s": 0},
            "eval": {"data": "demo", "reference": model, "limit": 4,
                     "max_tokens": {"generation": 16}},
            "fidelity": {"enabled": False},
            "scenario": {"name": "realtime_chat"}, "report": {"enabled": False}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


@pytest.mark.slow
def test_the_loop_end_to_end(cli, tiny_model, tmp_path):
    rate, n = 0.1, 40
    # a seed that samples at least 4 of the first n requests and 3 of the n after the drift
    seed = next(k for k in range(1000) if len(_sampled_indices(k, n, rate)) >= 4
                and sum(i >= n for i in _sampled_indices(k, 2 * n, rate)) >= 3)
    picked = _sampled_indices(seed, n, rate)
    edge_only_at = picked[-1]  # one sampled request of an edge-only task
    traffic = tmp_path / "traffic.jsonl"
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({"sampling": {"seed": seed,
                                                   "references": {"max_per_minute": 100}}}))
    with RecordingCloud() as cloud:
        deploy = _deploy(tmp_path, tiny_model, cloud.url)
        with serve([str(deploy), "--slots", "1", "--policy", str(policy), "--sample-rate",
                    str(rate), "--sample-out", str(traffic)], tmp_path) as s:
            ids = []
            for i in range(n):
                task = EDGE_ONLY if i == edge_only_at else "generation"
                r = httpx.post(s.v1 + "/chat/completions", timeout=60,
                               headers={"x-edgepick-task": task},
                               json={"messages": [{"role": "user", "content":
                                                   f"Say hello to {task} number {i}."}],
                                     "max_tokens": 8})
                assert r.status_code == 200, r.text
                ids.append(r.headers["x-request-id"])
            want = len(picked) - 1
            wait_until("cloud references", lambda: s.metric(
                "edgepick_sample_references_total", outcome="answered") == want, 60)
            rows = [json.loads(line) for line in traffic.read_text().splitlines()]
            assert sorted(r["meta"]["request_id"] for r in rows) == sorted(ids[i] for i in picked)
            wait_until("references written", lambda: all(
                not json.loads(x)["meta"]["reference_pending"]
                for x in traffic.read_text().splitlines()), 30)
            rows = [json.loads(x) for x in traffic.read_text().splitlines()]
            assert all(r["reference"] == REFERENCE for r in rows if r["task"] == "generation")
            assert [r["reference"] for r in rows if r["task"] == EDGE_ONLY] == [None]
            # the edge-only request never reached the cloud, the others each once
            assert len(cloud.bodies) == want
            assert not any(EDGE_ONLY in json.dumps(b) for b in cloud.bodies)

            # two "down" feedbacks on sampled requests, one "up" on one that was not
            down = [ids[i] for i in picked[:2]]
            for rid in down:
                r = httpx.post(s.v1 + "/feedback", json={"request_id": rid, "rating": "down",
                                                         "reason": "not helpful"}, timeout=10)
                assert r.status_code == 200 and r.json()["badcase"] is True, r.text
            unsampled = next(ids[i] for i in range(n) if i not in picked)
            assert httpx.post(s.v1 + "/feedback", json={"request_id": unsampled,
                                                        "rating": "up"}).json()["sampled"] is False
            bad = httpx.post(s.v1 + "/feedback", json={"request_id": "x", "rating": "meh"})
            assert bad.status_code == 400 and "rating" in bad.json()["error"]["message"]
            assert s.metric("edgepick_feedback_total", rating="down") == 2
            marked = [r for r in map(json.loads, traffic.read_text().splitlines())
                      if "badcase" in r.get("tags", [])]
            assert {r["meta"]["request_id"] for r in marked} >= set(down)

            before = cli("monitor", s.url, "--against", str(deploy), "--json")
            assert before.returncode == 0, before.stderr
            doc = json.loads(before.stdout)
            rows_m = {r["figure"]: r for r in doc["figures"]}
            assert doc["window"]["asked_s"] == 300
            assert rows_m["feedback received"]["live"] == 3
            fb = rows_m["user feedback rate (down / answered)"]
            assert fb["live"] == pytest.approx(2 / n) and fb["low"] < fb["live"] < fb["high"]
            assert rows_m["availability (requests without 5xx)"]["live"] == 1

            scrape_before = s.metrics()
            # the drift: the traffic switches to a task the tiny edge fails (JSON it cannot
            # write), which the evaluation never had
            for i in range(n):
                httpx.post(s.v1 + "/chat/completions", timeout=60,
                           headers={"x-edgepick-task": "extraction"},
                           json={"messages": [{"role": "user", "content":
                                               f"Extract the name as JSON: Li Wei, {i}."}],
                                 "max_tokens": 4}).raise_for_status()
            scrape_after = s.metrics()
            after = cli("monitor", s.url, "--against", str(deploy), "--check", "--json")
            assert after.returncode == 1, after.stdout + after.stderr
            doc = json.loads(after.stdout)
            assert any(w.startswith("task mix: extraction") or "unacceptable" in w
                       for w in doc["worse"]), doc["worse"]
            human = cli("monitor", s.url, "--against", str(deploy), "--check")
            assert human.returncode == 1 and "drift" in human.stdout

    # the rules the deploy's gates give pass the real promtool, and fire on this drift: the
    # server's own scrapes before and after it, as a Prometheus would have stored them
    rules = tmp_path / "rules.yaml"
    assert cli("alerts", str(deploy), "--out", str(rules), "--min-sampled", "3").returncode == 0
    checked = promtool("check", "rules", str(rules))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    _fires_on(tmp_path, rules, scrape_before, scrape_after)

    # the next round on the sampled items: a decision, a new deploy.yaml beside the old one
    old_bytes = deploy.read_bytes()
    plan = _plan(tmp_path, tiny_model)
    r = cli("run", str(plan), "--traffic", str(traffic), "--deployed", str(deploy))
    assert r.returncode == 0, r.stdout + r.stderr
    assert deploy.read_bytes() == old_bytes  # never over the deployed one
    new = [p for p in tmp_path.glob("deploy-*.yaml")]
    assert len(new) == 1, r.stdout
    cfg = DeployConfig.load(new[0])
    assert any("reselected on sampled traffic" in note for note in cfg.notes)
    assert "changed from" in r.stdout
