"""Several eval sets in one evaluation (a plan's `eval.data` list, `eval -d` repeated): the tiny
model over a few demo and tool-call items end to end, a re-run that generates nothing, refusals
of duplicate ids and of different data in combined runs, and the default plan's sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgepick.decide.selection import select
from edgepick.errors import EdgepickError, InputError
from edgepick.evaluate.eval_sets import DataSpec, load_sets, specs_of
from edgepick.plan.loader import load_plan
from edgepick.plan.runner import run_plan
from edgepick.store import ResultStore

PLAN = {
    "name": "two-sets", "device": "raspberry-pi-5", "output": "out",
    "candidates": [{"model": "tiny", "label": "tiny-f16"}],
    "runtime": {"threads": 2, "n_ctx": 1024},
    "bench": {"enabled": False}, "fidelity": {"enabled": False},
    "eval": {"data": ["demo", {"set": "demo-tools", "limit": 2}], "limit": 2,
             "reference": "tiny",
             "max_tokens": {"classification": 4, "yes_no": 4, "tool_call": 24}},
    "scenario": {"name": "agent_tool_calling"},
    "report": {"lang": "en"},
}


def _plan(tmp_path, **eval_over) -> object:
    plan = json.loads(json.dumps(PLAN))
    plan["eval"].update(eval_over)
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return load_plan(path)


def test_specs_take_names_mappings_and_a_default_limit():
    specs = specs_of(["demo", {"set": "demo-tools", "limit": 12}], 5)
    assert specs == [DataSpec(set="demo", limit=5), DataSpec(set="demo-tools", limit=12)]
    assert specs_of("demo", None) == [DataSpec(set="demo")]


def test_each_set_keeps_its_limit_and_tasks():
    sets = load_sets(specs_of(["demo", {"set": "demo-tools", "limit": 12}], 6))
    tasks = [it.task for it in sets.items]
    assert tasks.count("tool_call") == 12 and len(set(tasks[:6])) == 6  # one per demo task
    tools = [it for it in sets.items if it.task == "tool_call"]
    # the default plan's 12 tool items: both languages, calls and no-call items
    assert {it.id.split("-")[1] for it in tools} == {"en", "zh"}
    assert 0 < sum(it.reference == "none" for it in tools) < 12
    assert sets.label.endswith("demo_eval.jsonl + " + sets.label.split(" + ")[1])
    # one set alone keeps the identity it had before lists existed
    assert load_sets([DataSpec(set="demo", limit=6)]).sha != sets.sha


def test_an_id_in_two_sets_is_refused(tmp_path):
    line = {"id": "x1", "task": "yes_no", "prompt": "Is it?", "reference": "yes"}
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text(json.dumps(line) + "\n")
    with pytest.raises(InputError, match="item id 'x1' is also in .*a.jsonl"):
        load_sets([DataSpec(set=str(tmp_path / "a.jsonl")), DataSpec(set=str(tmp_path / "b.jsonl"))])


def test_bad_set_entries_fail_at_load_with_the_field(tmp_path):
    with pytest.raises(InputError, match=r"eval\.data\[1\].*'nope': no such eval set"):
        _plan(tmp_path, data=["demo", "nope"])
    with pytest.raises(InputError, match="listed twice"):
        _plan(tmp_path, data=["demo", {"set": "demo", "limit": 3}])
    with pytest.raises(InputError, match=r"eval\.data"):
        _plan(tmp_path, data=["demo", {"set": "demo-tools", "limit": 0}])


def test_default_plan_validates_with_the_tool_set():
    lp = load_plan("default")
    specs = lp.eval_specs()
    assert [s.set.rsplit("/", 1)[1] for s in specs] == ["demo_eval.jsonl", "demo_tools.jsonl"]
    assert specs[0].limit >= 100 and 10 <= specs[1].limit <= 20


def test_two_sets_run_end_to_end_and_rerun_measures_nothing(tmp_path):
    lp = _plan(tmp_path)
    res = run_plan(lp)
    s = res.summaries[0]
    assert set(s.tasks) == {"classification", "yes_no", "tool_call"}
    assert s.tasks["tool_call"].n == 2 and "tool_choice_accuracy" in s.tasks["tool_call"].metrics
    report = next(p for p in res.reports if p.suffix == ".md").read_text()
    assert "Tool calling" in report
    with ResultStore(lp.store_path) as st:
        outputs = st._conn.execute("SELECT count(*) FROM results WHERE kind='eval_output'"
                                   ).fetchone()[0]
        (payload,) = [p for _, p, _ in st.rows_with_runs("eval")]
    assert payload["n_items"] == 4 and " + " in payload["data"]
    again = run_plan(_plan(tmp_path))
    ev = again.summaries[0]
    assert ev.tasks["tool_call"].metrics == s.tasks["tool_call"].metrics
    with ResultStore(lp.store_path) as st:
        assert st._conn.execute("SELECT count(*) FROM results WHERE kind='eval_output'"
                                ).fetchone()[0] == outputs
        first, second = sorted(st.run_ids())
        select(st, [first, second])  # same data: combining the two runs is fine
    # other items in one set: a different evaluation, which a combined decision refuses
    run_plan(_plan(tmp_path, data=["demo", {"set": "demo-tools", "limit": 1}]))
    with ResultStore(lp.store_path) as st:
        third = max(st.run_ids())
        with pytest.raises(EdgepickError, match="eval of .*different settings"):
            select(st, [first, third])


def test_realtime_chat_routes_tool_calls_as_a_task_of_their_own():
    """The default run's scenario sets no tool gate: tool_call items are judged by the same
    per-task gates as the text tasks, and a hybrid plan sends them alone to a cloud that passes
    them and lowers their badcases (issue 26)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "decide"))  # its helper
    from test_decide_gates import summary

    from edgepick.decide.decision import decide
    from edgepick.decide.scenarios import load_scenario

    sc = load_scenario("realtime_chat", {"constraints": {"peak_memory_max": None}})
    tasks = {"classification": (0, 2, 2, 51), "qa": (0, 3, 3, 51), "tool_call": (6, 9, 0, 12)}  # a cloud that passes and helps
    d = decide([summary("edge", (6, 114), tasks, decode=40.0)], sc)
    (top,) = d.ranking
    assert not {g.metric for g in top.gates} & {"tool_choice_accuracy", "schema_valid_rate"}
    assert d.status == "hybrid"
    routes = {r.task: r.route for r in d.hybrid.routes}
    assert routes == {"classification": "edge", "qa": "edge", "tool_call": "cloud"}
    assert d.hybrid.cloud_share == pytest.approx(12 / 114)
    assert "tool_call goes to the cloud: unacceptable" in " ".join(d.explanation.why)


def test_eval_command_takes_data_repeated(cli, tmp_path):
    p = cli("eval", "-m", "tiny", "-r", "tiny", "-d", "demo", "-d", "demo-tools", "--limit", "1",
            "--ctx", "1024",
            "--store", str(tmp_path / "s.sqlite"), "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["n_items"] == 2 and data["data"].endswith("demo_tools.jsonl")
    assert set(data["candidates"][0]["per_task"]) == {"classification", "tool_call"}
