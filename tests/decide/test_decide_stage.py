"""The decide stage: one function from stored rows to decision, stored record, deploy.yaml and
the report with every section the store has material for, whoever calls it."""

from __future__ import annotations

from decide_payloads import filled_store

from edgepick.decide.decision import decide
from edgepick.decide.scenarios import load_scenario
from edgepick.decide.stage import DecideRequest, run
from edgepick.decide.summary import build_summaries
from edgepick.progress import ProgressEvent
from edgepick.records.deploy import DeployConfig


def test_stage_decides_stores_writes_deploy_and_report(store_path, tmp_path):
    sc = load_scenario("realtime_chat")
    events: list[ProgressEvent] = []
    with filled_store(store_path) as store:
        direct = decide(build_summaries(store), sc, 2 * 2**30)
        rec = run(DecideRequest(scenario=sc, budget=2 * 2**30, device="local",
                                store_as="job", deploy=tmp_path / "deploy.yaml",
                                report=tmp_path / "report", lang="en"), store, events.append)
        stored = store.get("decision", "job")
    assert rec.decision.recommendation == direct.recommendation
    assert rec.decision.model_dump(exclude={"explanation", "texts"}) == \
        direct.model_dump(exclude={"explanation", "texts"})
    assert stored["recommendation"] == direct.recommendation
    # decide, then render: the stored decision carries its words in every language
    assert set(stored["texts"]["explanations"]) == {"en", "zh"}
    assert stored["texts"]["explanations"]["en"] == rec.decision.explanation.model_dump()
    cfg = DeployConfig.load(rec.deploy)
    assert cfg.model.name == direct.recommendation and cfg.device == "local"
    assert cfg.network == "online" and cfg.edge_only_tasks == [] and not cfg.lock_sampling
    assert [p.rsplit("/", 1)[-1] for p in rec.reports] == ["report.en.html", "report.en.md"]
    assert events[-1].done == events[-1].total
    # a second run replaces the file and says so
    with filled_store(store_path) as store:
        again = run(DecideRequest(scenario=sc, budget=2 * 2**30, deploy=tmp_path / "deploy.yaml"),
                    store)
    assert again.deploy_replaced and any("replaced the existing" in n for n in again.notes)


def test_nothing_to_recommend_is_a_note_not_a_file(store_path, tmp_path):
    sc = load_scenario("realtime_chat")
    with filled_store(store_path) as store:  # a 10 MiB budget: nothing fits
        rec = run(DecideRequest(scenario=sc, budget=10 * 2**20, deploy=tmp_path / "d.yaml"), store)
    assert rec.decision.status == "none" and rec.deploy is None
    assert not (tmp_path / "d.yaml").exists()
    assert any("no deploy.yaml written" in n for n in rec.notes)
