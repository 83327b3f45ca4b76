"""doctor's outputs: --json and the zh table, the report section (en and zh) it adds beside a
deploy, reuse of stored figures, the healthy deploy, and monitor's hint (issue 36)."""

from __future__ import annotations

import json

from edgepick.doctor.finding import DoctorReport, Evidence, Finding, Fix, ranked
from edgepick.monitor.doctor_hint import doctor_commands


def test_json_and_chinese_table(cli, broken, store_path):
    res = cli("doctor", broken["truncated"], "--json", "--store", store_path)
    assert res.returncode == 1  # a cause was found
    out = json.loads(res.stdout)
    assert out["findings"][0]["cause"] == "file_integrity"
    assert out["findings"][0]["evidence"][0]["command"].startswith("edgepick inspect")
    zh = cli("doctor", broken["truncated"], "--lang", "zh", "--store", store_path)
    assert "文件完整性" in zh.stdout


def test_report_section_beside_a_deploy(cli, broken, tmp_path, store_path):
    from edgepick.records.deploy import DeployConfig, DeployModel

    deploy = DeployConfig(model=DeployModel(name="cut", path=broken["truncated"],
                                            sha256="0" * 64)).dump(tmp_path / "deploy.yaml")
    (tmp_path / "report").mkdir()
    for lg in ("en", "zh"):
        (tmp_path / "report" / f"report.{lg}.html").write_text("<html><body></body></html>")
    for _ in range(2):  # a second run replaces the section, never stacks it
        cli("doctor", str(deploy), "--store", store_path)
    en = (tmp_path / "report" / "report.en.html").read_text()
    zh = (tmp_path / "report" / "report.zh.html").read_text()
    assert en.count("Doctor: causes found") == 1 and "file integrity" in en
    assert "诊断" in zh and "文件完整性" in zh


def test_context_figures_are_reused_from_the_store(doctor, write_deploy, tiny_model, tmp_path):
    prompts = tmp_path / "p.txt"
    prompts.write_text("word " * 300 + "\nshort\n")
    deploy = write_deploy(tiny_model, runtime={"n_ctx": 256})
    first = doctor(deploy, symptom="context-overflow", prompts=str(prompts),
                   checks=["context_overflow"])
    again = doctor(deploy, symptom="context-overflow", prompts=str(prompts),
                   checks=["context_overflow"])
    assert first.findings[0].cause == again.findings[0].cause == "context_overflow"
    assert not first.checks[0].reused and again.checks[0].reused


def test_healthy_deploy_gets_no_finding(doctor, write_deploy, spare_copy):
    """The bundled Q4_1 as decided: nothing wrong with it. Other work on this shared host is
    a real finding (host_load) when it is there, and only that may be reported."""
    import os

    import psutil

    # the real engine's sustained run, 6 s of doctor's 12 (tests/leaky_engine.py)
    rep = doctor(write_deploy(spare_copy, runtime={"n_ctx": 1024}),
                 sustain_worker="leaky_engine:measure_sustain_short")
    assert [f.cause for f in rep.findings if f.cause != "host_load"] == []
    for f in rep.findings:  # other work, named: never this test's own processes
        ours = {os.getpid()} | {c.pid for c in psutil.Process().children(recursive=True)}
        named = [row[0] for e in f.evidence if e.what.startswith("busiest") for row in e.value]
        assert not set(named) & ours
    assert {c.check for c in rep.checks if c.status == "clear"} >= {
        "file_integrity", "engine_support", "memory_budget", "chat_template", "sampling"}
    assert not [c for c in rep.checks if c.status == "error"]


def test_ranking_puts_the_clearer_cause_first():
    def f(cause, conf):
        return Finding(symptom="garbled", cause=cause, summary="", fix=Fix(text=""),
                       confidence=conf, check=cause, evidence=[Evidence(what="x")])

    found = [f("host_load", 0.95), f("quantization", 0.75), f("file_integrity", 0.95),
             f("sampling", 0.95)]
    order = ranked(found, "garbled")  # a symptom: the clearer separation first
    assert [x.cause for x in order] == ["file_integrity", "sampling", "host_load", "quantization"]
    quick = ranked(found)  # no symptom: what stops loading, then answers, then speed
    assert [x.cause for x in quick] == ["file_integrity", "sampling", "quantization", "host_load"]
    assert DoctorReport.model_validate(DoctorReport(target="t", kind="gguf", budget_s=1,
                                                    findings=order).model_dump())


def test_monitor_names_the_doctor_command():
    cmds = doctor_commands(["TTFT P99", "decode tok/s P5", "unacceptable (sampled)",
                            "TTFT P50"], "deploy.yaml")
    assert cmds == ["edgepick doctor deploy.yaml --symptom slow-first-token",
                    "edgepick doctor deploy.yaml --symptom slow",
                    "edgepick doctor deploy.yaml --symptom garbled"]
    assert doctor_commands(["availability (time ready)"], None) == []


def test_every_figure_monitor_can_judge_worse_has_a_doctor_command():
    """monitor's own figure names, as live.figures writes them against a full baseline."""
    from edgepick.monitor.live import figures, parse
    from edgepick.records.deploy import Baseline

    base = Baseline(ttft_p50_ms=1, ttft_p99_ms=1, decode_tps=1, peak_memory_bytes=1,
                    unacceptable_rate=0.1, format_error_rate=0.1, badcases_per_1000=1,
                    power_w=1, temperature_c=1)
    judged = [r.figure for r in figures(parse(""), base) if r.baseline is not None]
    assert len(judged) == 9
    assert len(doctor_commands(judged, "d.yaml")) == len({
        "slow-first-token", "slow", "memory-growth", "garbled", "tool-calls"})
    assert all(doctor_commands([name], "d.yaml") for name in judged), judged
