"""Decide chooses speculative decoding per task from the recommended file's stored per-task
measurement: on where the speed-up's interval lies above 1 and every greedy answer stayed the
same, off where it loses, is undetermined, drafted nothing or changed an answer; deploy.yaml
carries the choice (runtime.speculative for every task, or a second engine over the same file
reached by route), the report shows each kind's figures with the choice."""

from __future__ import annotations

import pytest
from decide_payloads import bench_rows, cand_eval, eval_result
from typer.testing import CliRunner

from edgepick.bench.speculation_stage import KIND
from edgepick.cli.app import app
from edgepick.decide.scenarios import load_scenario
from edgepick.decide.stage import DecideRequest, run
from edgepick.records.deploy import DeployConfig
from edgepick.records.speculative import SpecFigures
from edgepick.store import ResultStore
from edgepick.store.identity import file_sha256

TASKS = {"extraction": (0.50, 0.52), "qa": (0.37, 0.38), "summary": (0.60, 0.62)}
NGRAM = {"type": "ngram-mod"}


def fig(task: str, speedup: tuple[float, float, float], identical: int = 5, items: int = 5,
        setting: str = "ngram-mod", verdict: str | None = None) -> SpecFigures:
    x, lo, hi = speedup
    v = verdict or ("wins" if lo > 1 else "loses" if hi < 1 else "undetermined")
    return SpecFigures(task=task, setting=setting, items=items, speedup=x, speedup_low=lo,
                       speedup_high=hi, acceptance=0.8, acceptance_low=0.7, acceptance_high=0.9,
                       mean_accepted_len=6.0, draft_share=0.0, identical=identical,
                       identical_low=0.5, identical_high=1.0, verdict=v)


def _store(path: str, model: str, figures: list[SpecFigures], kinds=(NGRAM,)) -> ResultStore:
    store = ResultStore(path)
    for r in bench_rows(model, ttft_ms=90, decode=62, peak=160 * 2**20):
        store.put("bench", r.key, r.model_dump(mode="json"))
    store.put("eval", "e1", eval_result([cand_eval(model, "smol", TASKS)]).model_dump(mode="json"))
    store.put(KIND, "s1", {
        "key": "s1", "model": model, "model_sha256": file_sha256(model), "label": "smol",
        "base": {"threads": 2, "n_ctx": 1024}, "kinds": list(kinds), "items": ["a"],
        "figures": [f.model_dump() for f in figures], "timing_gap": 0.021, "requests": []})
    return store


def _decide(store, tmp_path, budget=2 * 2**30):
    return run(DecideRequest(scenario=load_scenario("realtime_chat"), budget=budget,
                             deploy=tmp_path / "deploy.yaml", report=tmp_path / "report",
                             lang="both"), store)


def test_on_where_it_wins_off_where_it_loses_changes_text_or_was_not_measured(
        tiny_model, store_path, tmp_path):
    figures = [fig("extraction", (1.4, 1.2, 1.6)),
               fig("qa", (0.6, 0.5, 0.7)),
               fig("summary", (1.5, 1.3, 1.7), identical=4)]  # fast, but changed an answer
    with _store(store_path, tiny_model, figures) as store:
        rec = _decide(store, tmp_path)
        stored = store.get("decision", "x")
    assert stored is None  # not asked to store; the record carries the choice
    sp = rec.decision.speculation
    got = {t.task: (t.chosen.type if t.chosen else None, t.reason) for t in sp.tasks}
    assert got == {"extraction": ("ngram-mod", "wins"), "qa": (None, "loses"),
                   "summary": (None, "changed")}
    assert sp.applied == "per-task"

    cfg = DeployConfig.load(rec.deploy)
    assert cfg.schema_version == 2 and cfg.runtime.speculative is None
    names = [m.name for m in cfg.models]
    assert names == ["smol", "smol+ngram-mod"]
    spec_member = cfg.models[1]
    assert spec_member.path == cfg.model.path and spec_member.sha256 == cfg.model.sha256
    assert spec_member.runtime.speculative.type == "ngram-mod" and spec_member.pin
    assert {r.task: r.route for r in cfg.routes} == {
        "extraction": "smol+ngram-mod", "qa": "edge", "summary": "edge"}

    en = (tmp_path / "report" / "report.en.md").read_text()
    assert "## Speculative decoding per task: smol" in en
    assert "| extraction | ngram-mod | 1.40 [1.20, 1.60] | 0.80 [0.70, 0.90] |" in en
    assert "chosen (wins)" in en and "| qa | ngram-mod | 0.60 [0.50, 0.70]" in en
    assert "changed an answer" in en and "ngram-mod for extraction, by route" in en
    zh = (tmp_path / "report" / "report.zh.md").read_text()
    assert "按任务的投机解码" in zh
    assert "投机解码" in (tmp_path / "report" / "report.en.html").read_text() or \
        "Speculative decoding per task" in (tmp_path / "report" / "report.en.html").read_text()


def test_one_kind_winning_everywhere_is_the_runtime_setting(tiny_model, store_path, tmp_path):
    figures = [fig(t, (1.3, 1.1, 1.5)) for t in TASKS]
    with _store(store_path, tiny_model, figures) as store:
        rec = _decide(store, tmp_path)
    assert rec.decision.speculation.applied == "everywhere"
    cfg = DeployConfig.load(rec.deploy)
    assert cfg.schema_version == 1 and not cfg.models
    assert cfg.runtime.speculative.type == "ngram-mod"


@pytest.mark.parametrize("verdicts", [("undetermined", "loses", "idle")])
def test_nothing_winning_is_plain_decoding_everywhere(tiny_model, store_path, tmp_path, verdicts):
    ivs = {"undetermined": (1.1, 0.8, 1.4), "loses": (0.5, 0.4, 0.6), "idle": (1.2, 0.9, 1.5)}
    figures = [fig(t, ivs[v], verdict=v) for t, v in zip(TASKS, verdicts)]
    with _store(store_path, tiny_model, figures) as store:
        rec = _decide(store, tmp_path)
    sp = rec.decision.speculation
    assert sp.applied == "off"
    assert [t.reason for t in sp.tasks] == list(verdicts)
    cfg = DeployConfig.load(rec.deploy)
    assert cfg.runtime.speculative is None and not cfg.models
    assert "plain decoding for every task" in (tmp_path / "report" / "report.en.md").read_text()


def test_a_second_engine_over_budget_keeps_speculation_off(tiny_model, store_path, tmp_path):
    figures = [fig("extraction", (1.4, 1.2, 1.6)), fig("qa", (0.6, 0.5, 0.7))]
    with _store(store_path, tiny_model, figures) as store:  # one engine fits, two do not
        rec = _decide(store, tmp_path, budget=250 * 2**20)
    sp = rec.decision.speculation
    assert sp.applied == "off" and "exceeds the budget" in sp.note
    assert [t.reason for t in sp.tasks[:2]] == ["wins", "loses"]  # the figures still speak
    assert sp.tasks[2].reason == "unmeasured"
    cfg = DeployConfig.load(rec.deploy)
    assert cfg.runtime.speculative is None and not cfg.models


def test_another_files_measurement_is_not_read(tiny_model, smollm2_q4_1, store_path, tmp_path):
    with _store(store_path, tiny_model, [fig("qa", (1.4, 1.2, 1.6))]) as store:
        store.put(KIND, "s1", {**store.get(KIND, "s1"), "model_sha256": "0" * 64})
        rec = _decide(store, tmp_path)
    assert rec.decision.speculation is None
    assert DeployConfig.load(rec.deploy).runtime.speculative is None


def test_decide_prints_the_choice_per_task(tiny_model, store_path, tmp_path):
    figures = [fig("extraction", (1.4, 1.2, 1.6)), fig("qa", (0.6, 0.5, 0.7))]
    _store(store_path, tiny_model, figures).close()
    done = CliRunner().invoke(app, ["decide", "--store", store_path, "--deploy",
                                    str(tmp_path / "deploy.yaml")], env={"COLUMNS": "100"})
    assert done.exit_code == 0, done.output
    assert "speculative decoding (deploy.yaml: per-task):" in done.stdout
    assert "extraction: ngram-mod — ngram-mod 1.40× [1.20, 1.60]" in done.stdout
    assert "qa: off (loses) — ngram-mod 0.60× [0.50, 0.70]" in done.stdout
    assert "summary: off (unmeasured)" in done.stdout
