"""Sequential evaluation (evaluate/looks.py) on a scripted engine: what is settled stops, the
reference answers only what a candidate needed, fixed N is one flag away, a rerun replays the
same looks from the store, and a time budget ends the run naming what is left open."""

from __future__ import annotations

import json

import pytest

from edgepick.evaluate.seq_gates import EvalGate
from edgepick.evaluate.stage import EvalRequest, run

from scripted_engine import ScriptedBackend

UNACCEPTABLE = EvalGate(metric="unacceptable_rate", direction="max", limit=0.05,
                        scopes=("candidate", "task"))


@pytest.fixture
def data(tmp_path):
    """40 yes/no items and 40 classification items, easy and hard; the prompt is the item id."""
    path = tmp_path / "set.jsonl"
    lines = []
    for i in range(40):
        d = "easy" if i % 2 else "hard"
        lines.append({"id": f"yn{i}", "task": "yes_no", "prompt": f"yn{i}", "reference": "yes",
                      "difficulty": d})
        lines.append({"id": f"cl{i}", "task": "classification", "prompt": f"cl{i}",
                      "reference": "positive", "labels": ["positive", "negative"],
                      "difficulty": d})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return str(path)


def right(prompt, seed):
    return "yes" if prompt.startswith("yn") else "positive"


def empty(prompt, seed):
    return ""  # unacceptable on every item


def bad_on_yes_no(prompt, seed):
    return "" if prompt.startswith("yn") else "positive"


def _req(data, ref, cands, **kw):
    return EvalRequest(data=data, reference=ref, candidates=cands, sequential=True,
                       gates=[UNACCEPTABLE], **kw)


def test_a_settled_candidate_stops_and_the_reference_is_paired(scripted, data):
    make, store = scripted
    ref, good, bad = make("ref", right), make("good", right), make("bad", empty)
    res = run(_req(data, ref, [good, bad]), store)
    seq = res.sequential
    by = {c.name: c for c in seq.candidates}
    # "bad" fails its overall and both task gates on the first look (4 items per task)
    assert by["bad"].items == 8 and by["bad"].stopped_look == 1
    assert {(g.metric, g.task, g.verdict, g.look) for g in by["bad"].gates} == {
        ("unacceptable_rate", None, "fail", 1), ("unacceptable_rate", "yes_no", "fail", 1),
        ("unacceptable_rate", "classification", "fail", 1)}
    # 0 of 40 per task cannot prove "under 5%": "good" runs to the cap, undetermined
    assert by["good"].items == 80 and by["good"].why == "cap"
    assert "good: unacceptable_rate (yes_no)" in seq.undetermined
    # paired: the reference answered exactly the union of what the candidates needed
    assert seq.reference_items == 80
    bad_eval = next(c for c in res.candidates if c.name == "bad")
    assert bad_eval.overall.n == 8 and bad_eval.unacceptable.count == 8
    assert len(ScriptedBackend.calls) == 80 + 80 + 8  # ref, good, bad: not 3 × 80


def test_fixed_n_is_one_flag_away(scripted, data):
    make, store = scripted
    ref, bad = make("ref", right), make("bad", empty)
    res = run(_req(data, ref, [bad]).model_copy(update={"sequential": False}), store)
    assert res.sequential is None
    assert res.candidates[0].overall.n == 80 and len(ScriptedBackend.calls) == 160


def test_a_rerun_replays_the_same_looks_from_the_store(scripted, data):
    make, store = scripted
    ref, good, bad = make("ref", right), make("good", right), make("bad", bad_on_yes_no)
    first = run(_req(data, ref, [good, bad]), store)
    n = len(ScriptedBackend.calls)
    again = run(_req(data, ref, [good, bad]), store)
    assert len(ScriptedBackend.calls) == n  # every output came back from the store
    # the same looks and stops; only the timing differs (nothing was generated the second time)
    assert again.sequential.seconds_per_generation == {}
    timed = {"seconds_per_generation": first.sequential.seconds_per_generation}
    assert again.sequential.model_copy(update=timed) == first.sequential
    # yes/no fails on its first look, and gets more items only while the overall gate is
    # open; classification (never unacceptable) stays open to the cap
    bad = next(c for c in first.candidates if c.name == "bad")
    assert bad.per_task["classification"].n == 40 and bad.per_task["yes_no"].n <= 8


def test_a_gate_no_routing_avoids_stops_the_candidate_whole(scripted, data):
    make, store = scripted
    ref, bad = make("ref", right), make("bad", bad_on_yes_no)
    gate = UNACCEPTABLE.model_copy(update={"scopes": ("candidate",), "routable": False})
    res = run(_req(data, ref, [bad]).model_copy(update={"gates": [gate]}), store)
    c = res.sequential.candidates[0]
    assert c.items == 8 and c.why.startswith("fails unacceptable_rate")


def test_a_budget_stops_within_one_generation_and_names_what_is_open(scripted, data, monkeypatch):
    import edgepick.clock

    make, store = scripted
    ScriptedBackend.clock = [0.0]
    monkeypatch.setattr(edgepick.clock, "clock", lambda: ScriptedBackend.clock[0])
    ref, good = make("ref", right), make("good", right)
    res = run(_req(data, ref, [good], budget_s=30.0), store)  # one generation = 1 s here
    assert len(ScriptedBackend.calls) <= 30 + 1
    seq = res.sequential
    assert seq.budget_exhausted and seq.budget_s == 30.0
    assert "good: unacceptable_rate" in seq.undetermined
    assert seq.to_settle["good: unacceptable_rate (yes_no)"]  # the next items in line


def test_the_task_mix_reads_the_planned_items_not_the_stopped_ones(scripted, data):
    from edgepick.decide.hybrid import task_mix
    from edgepick.decide.scenarios import load_scenario
    from edgepick.records.decision import CandidateSummary, TaskQuality

    make, store = scripted
    ref, bad = make("ref", right), make("bad", bad_on_yes_no)
    res = run(_req(data, ref, [bad]), store)
    per_task = res.candidates[0].per_task
    assert per_task["yes_no"].n < per_task["classification"].n  # yes/no stopped early
    assert {t: g.metrics["planned_items"] for t, g in per_task.items()} == {
        "yes_no": 40.0, "classification": 40.0}
    s = CandidateSummary(candidate="bad", model="bad.gguf", tasks={
        t: TaskQuality(n=g.n, metrics=dict(g.metrics)) for t, g in per_task.items()})
    mix, source = task_mix(s, load_scenario("realtime_chat"))
    assert mix == {"yes_no": 0.5, "classification": 0.5} and source == "eval set proportions"
