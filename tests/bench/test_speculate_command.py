"""`edgepick speculate` end to end on a real llama-server: per task, each kind against plain
decoding with intervals and acceptance, a foreign-vocabulary draft refused in one line naming
both files while the other kinds are measured, the record stored and reused; then decide reads
it and chooses per task, and deploy.yaml carries exactly what the figures say."""

from __future__ import annotations

import json

import typer
from decide_payloads import bench_rows, cand_eval, eval_result
from typer.testing import CliRunner

from edgepick.assets.bundled import gemma3_270m_q4_k_m
from edgepick.bench.speculation_stage import KIND
from edgepick.cli import cmd_speculate
from edgepick.decide.scenarios import load_scenario
from edgepick.decide.stage import DecideRequest, run
from edgepick.records.deploy import DeployConfig
from edgepick.store import ResultStore
from tests.parts import need_tool


def _app() -> typer.Typer:
    app = typer.Typer()
    cmd_speculate.register(app)

    @app.command("x", hidden=True)  # a second command keeps `speculate` a named subcommand
    def _x() -> None:
        pass

    return app


def test_speculate_measures_per_task_stores_and_decide_chooses(tiny_model, tmp_path):
    need_tool("llama-server")
    store = str(tmp_path / "results.sqlite")
    gemma = str(gemma3_270m_q4_k_m())
    args = ["speculate", "-m", tiny_model, "--kind", "ngram-mod",
            "--kind", f"draft-simple:{gemma}:4", "--tasks", "extraction,qa", "--per-task", "2",
            "--max-tokens", "12", "--threads", "2", "--ctx", "512", "--store", store, "--json"]
    done = CliRunner().invoke(_app(), args)
    assert done.exit_code == 0, done.output
    rec = json.loads(done.stdout[done.stdout.index("{"):])
    # the foreign draft: one line naming both files; ngram-mod still measured
    (why,) = rec["refused"].values()
    assert "\n" not in why and gemma in why and tiny_model in why
    assert [(f["task"], f["setting"]) for f in rec["figures"]] == [
        ("extraction", "ngram-mod"), ("qa", "ngram-mod")]
    for f in rec["figures"]:
        assert f["items"] == 2 and f["identical"] == 2  # greedy text unchanged
        if f["speedup_low"] is not None:  # an interval needs two items it drafted on
            assert f["speedup_low"] <= f["speedup"] <= f["speedup_high"]
        assert f["verdict"] in ("wins", "loses", "undetermined", "idle")
        if f["verdict"] != "idle":
            assert f["acceptance_low"] <= f["acceptance"] <= f["acceptance_high"]
    assert rec["items"] and not rec["reused"]

    again = CliRunner().invoke(_app(), args[:-1])  # the same measurement: reused, as a table
    assert again.exit_code == 0, again.output
    assert "reused from the store" in again.stdout and "ngram-mod" in again.stdout

    with ResultStore(store) as rs:  # the rest of a plan's rows for this file, then decide
        assert len(list(rs.items(KIND))) == 1
        for r in bench_rows(tiny_model, ttft_ms=90, decode=62, peak=160 * 2**20):
            rs.put("bench", r.key, r.model_dump(mode="json"))
        tasks = {"extraction": (0.5, 0.52), "qa": (0.37, 0.38)}
        rs.put("eval", "e1", eval_result([cand_eval(tiny_model, "tiny", tasks)]).model_dump(
            mode="json"))
        out = run(DecideRequest(scenario=load_scenario("realtime_chat"), budget=2 * 2**30,
                                deploy=tmp_path / "deploy.yaml"), rs)
    sp = out.decision.speculation
    verdicts = {f["task"]: f["verdict"] for f in rec["figures"]}
    assert {t.task: t.reason for t in sp.tasks} == verdicts  # one kind: its verdict is the reason
    cfg = DeployConfig.load(out.deploy)
    wins = sorted(t for t, v in verdicts.items() if v == "wins")
    if wins == ["extraction", "qa"]:
        assert sp.applied == "everywhere" and cfg.runtime.speculative.type == "ngram-mod"
    elif wins:
        assert sp.applied == "per-task"
        assert {r.task: r.route for r in cfg.routes}[wins[0]] == "tiny+ngram-mod"
    else:  # on a busy 2-core host the honest answer is usually this one
        assert sp.applied == "off" and cfg.runtime.speculative is None and not cfg.models
