"""`edgepick alerts DEPLOY.yaml --out rules.yaml`: rules the real `promtool check rules` accepts,
and a `promtool test rules` file showing them fire on a drift (the traffic switched to a task
the edge fails: unacceptable outputs and slow first tokens) and on an OOM kill — and stay quiet
before it."""

from __future__ import annotations

import yaml

from edgepick.records.deploy import Baseline, DeployConfig, DeployModel, Gate
from promtool_tool import promtool, write_test


def _deploy(tmp_path):
    cfg = DeployConfig(
        model=DeployModel(name="tiny-chat", path="/m.gguf", sha256="0" * 64), run_id="7",
        gates=[Gate(metric="ttft_p99_ms", limit=2000, verdict="pass"),
               Gate(metric="decode_tps", limit=5, direction="min", verdict="pass"),
               Gate(metric="peak_memory", limit=2**30, verdict="pass"),
               Gate(metric="unacceptable_rate", value=0.01, low=0.0, high=0.04, limit=0.05,
                    verdict="pass"),
               Gate(metric="format_compliance", limit=0.9, direction="min", verdict="pass")],
        baseline=Baseline(ttft_p50_ms=300, unacceptable_rate=0.01))
    return cfg.dump(tmp_path / "deploy.yaml")


def test_rules_pass_promtool_and_fire_on_a_drift(cli, tmp_path):
    deploy = _deploy(tmp_path)
    rules_path = tmp_path / "rules.yaml"
    r = cli("alerts", str(deploy), "--out", str(rules_path))
    assert r.returncode == 0, r.stderr
    checked = promtool("check", "rules", str(rules_path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout
    again = cli("alerts", str(deploy), "--out", str(rules_path))
    assert again.returncode != 0 and "--force" in again.stderr  # never over a file unasked

    rules = {r["alert"]: r for r in yaml.safe_load(rules_path.read_text())["groups"][0]["rules"]}
    assert {"EdgepickTTFTP99High", "EdgepickTTFTP50High", "EdgepickDecodeP5Low",
            "EdgepickEngineMemoryHigh", "EdgepickSampledUnacceptableHigh",
            "EdgepickSampledFormatErrorsHigh", "EdgepickErrorRateHigh",
            "EdgepickRejectionRateHigh", "EdgepickNotReady", "EdgepickEngineOOMKilled"} <= set(rules)
    assert "histogram_quantile(0.99" in rules["EdgepickTTFTP99High"]["expr"]
    assert "histogram_quantile(0.05" in rules["EdgepickDecodeP5Low"]["expr"]

    def fired(name: str, **labels: str) -> list[dict]:
        return [{"exp_labels": {"severity": "warning", "model": "tiny-chat", **labels},
                 "exp_annotations": rules[name]["annotations"]}]

    # one scrape a minute for an hour; the traffic drifts at 30 min, the engine is OOM-killed
    # at 40 min
    series = [
        {"series": 'edgepick_sampled_outputs_total{verdict="ok"}', "values": "0+2x60"},
        {"series": 'edgepick_sampled_outputs_total{verdict="unacceptable"}',
         "values": "0x30 3+3x29"},
        {"series": 'edgepick_ttft_seconds_bucket{route="edge",le="0.5"}',
         "values": "0+10x30 300x29"},
        {"series": 'edgepick_ttft_seconds_bucket{route="edge",le="7.5"}', "values": "0+10x60"},
        {"series": 'edgepick_ttft_seconds_bucket{route="edge",le="+Inf"}', "values": "0+10x60"},
        {"series": 'edgepick_engine_oom_kills_total{evidence="cgroup"}', "values": "0x40 1x19"},
        {"series": 'edgepick_requests_total{endpoint="/v1/chat/completions",status="200"}',
         "values": "0+12x60"},
        {"series": "edgepick_ready", "values": "1x60"},
    ]
    quiet = ["EdgepickSampledUnacceptableHigh", "EdgepickTTFTP99High", "EdgepickEngineOOMKilled",
             "EdgepickNotReady", "EdgepickErrorRateHigh"]
    alert_tests = [{"eval_time": "25m", "alertname": a, "exp_alerts": []} for a in quiet]
    alert_tests += [
        {"eval_time": "60m", "alertname": "EdgepickSampledUnacceptableHigh",
         "exp_alerts": fired("EdgepickSampledUnacceptableHigh")},
        {"eval_time": "60m", "alertname": "EdgepickTTFTP99High",
         "exp_alerts": fired("EdgepickTTFTP99High")},
        {"eval_time": "45m", "alertname": "EdgepickEngineOOMKilled",
         "exp_alerts": fired("EdgepickEngineOOMKilled", evidence="cgroup")},
        {"eval_time": "60m", "alertname": "EdgepickNotReady", "exp_alerts": []},
    ]
    test = write_test(tmp_path / "rules_test.yaml",
                      [{"interval": "1m", "input_series": series, "alert_rule_test": alert_tests}],
                      rule_files=[rules_path.name], interval="1m")
    r = promtool("test", "rules", test.name, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_deploy_without_limits_says_which_rules_it_left_out(cli, tmp_path):
    cfg = DeployConfig(model=DeployModel(name="m", path="/m.gguf", sha256="0" * 64))
    path = cfg.dump(tmp_path / "deploy.yaml")
    r = cli("alerts", str(path))
    assert r.returncode == 0, r.stderr
    assert "# no rule: TTFT P99" in r.stdout and "EdgepickErrorRateHigh" in r.stdout
    checked_path = tmp_path / "r.yaml"
    checked_path.write_text(r.stdout)
    checked = promtool("check", "rules", str(checked_path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
