"""The gate table: a gate registered from outside src/ (here, from the test) is a scenario
constraint, gated with its interval, explained and reported, with no edit under src/."""

from __future__ import annotations

import pytest

from edgepick.decide.decision import decide
from edgepick.gate_spec import GateSpec, gate_table, register_gate, unregister_gate
from edgepick.decide.scenarios import Constraints, Scenario, load_scenario
from edgepick.errors import InputError
from edgepick.evaluate.intervals import wilson
from edgepick.records.decision import CandidateSummary, Figure, TaskQuality
from edgepick.decide.wording import describe
from edgepick.report.tables import gates_table


def _rate(count: int, n: int) -> Figure:
    lo, hi = wilson(count, n)
    return Figure(value=count / n, low=lo, high=hi, n=n, count=count, method="wilson")


@pytest.fixture
def refusal_gate():
    """A plugin's gate: the share of replies that refuse, read off the summary's figures (its
    producer is the eval stage's scorer; here the test fills the figure)."""
    spec = register_gate(GateSpec(
        name="refusal_rate_max", metric="refusal_rate", direction="max", format="{:.1%}",
        scope=("candidate", "task"), interval="wilson",
        label={"en": "refusal rate", "zh": "拒答率"}, bounds=(0, 1),
        advice={"en": "a system prompt that allows the task", "zh": "允许该任务的系统提示词"},
        task_figure=lambda q: None if "refusal_rate" not in q.metrics else Figure(
            value=q.metrics["refusal_rate"])))
    yield spec
    unregister_gate(spec.name)


def _summary(name: str, refusals: int, n: int = 200) -> CandidateSummary:
    s = CandidateSummary(candidate=name, model=f"/m/{name}.gguf", decode_tps=30.0,
                         quality_overall=0.8)
    s.figures["refusal_rate"] = _rate(refusals, n)
    s.tasks["chat"] = TaskQuality(n=n, score=0.8, metrics={"refusal_rate": refusals / n})
    return s


def test_a_gate_registered_from_outside_is_gated_explained_and_reported(refusal_gate, tmp_path):
    assert "refusal_rate_max" in gate_table()
    f = tmp_path / "sc.yaml"
    f.write_text("name: polite\nconstraints:\n  peak_memory_max: null\n  refusal_rate_max: 0.05\n",
                 encoding="utf-8")
    sc = load_scenario(str(f))
    assert sc.constraints.limit("refusal_rate_max") == 0.05
    d = decide([_summary("good", 0), _summary("rude", 60)], sc)
    assert d.recommendation == "good" and d.status == "proven"
    good = next(r for r in d.ranking if r.candidate == "good")
    rude = next(r for r in d.ranking if r.candidate == "rude")
    assert [(g.metric, g.verdict) for g in good.gates] == [("refusal_rate", "pass")]
    assert rude.eliminated and rude.violations[0].constraint == "refusal_rate_max"
    assert "refusal rate 30.0% [" in rude.violations[0].text  # its label, value and interval
    assert [g.metric for g in rude.task_gates["chat"]] == ["refusal_rate"]  # task scope too
    assert any("refusal rate" in line for line in d.explanation.why)
    d.texts = describe(d, [_summary("good", 0), _summary("rude", 60)], sc)
    header, rows = gates_table(d, "zh")
    assert any(r[1] == "拒答率" for r in rows)  # its bilingual label in the report's table
    d = decide([_summary("rude", 60)], sc)  # everyone fails it: the gate's own advice
    assert d.status == "none"
    assert any("a system prompt that allows the task" in line for line in d.explanation.why)


def test_unregistered_gate_is_an_unknown_constraint_in_one_line(tmp_path):
    f = tmp_path / "sc.yaml"
    f.write_text("name: x\nconstraints:\n  refusal_rate_max: 0.05\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_scenario(str(f))
    assert exc.value.field == "constraints.refusal_rate_max" and "unknown field" in str(exc.value)
    assert "\n" not in str(exc.value)


def test_limits_are_checked_against_the_gate_bounds():
    with pytest.raises(ValueError, match="unacceptable_rate_max"):
        Constraints(unacceptable_rate_max=1.5)


def test_old_spelling_of_the_schema_gate_is_accepted_with_a_deprecation_line(capsys):
    c = Constraints(tool_schema_valid_min=0.9)
    assert c.schema_valid_rate_min == 0.9
    assert "tool_schema_valid_min is deprecated; write schema_valid_rate_min" in \
        capsys.readouterr().err
    assert gate_table()["schema_valid_rate_min"].metric == "schema_valid_rate"


def test_every_builtin_gate_has_both_labels_and_a_scenario_field():
    fields = set(Constraints.model_fields)
    for g in gate_table().values():
        assert g.label.get("en") and g.label.get("zh"), g.name
        assert g.name in fields, g.name
    assert Scenario(name="s").constraints.peak_memory_max == "budget"


def test_a_gate_from_an_installed_packages_entry_point(tmp_path, monkeypatch):
    """A package declaring `[project.entry-points."edgepick.gates"]` adds its gate, found by the
    one plugin registry; nothing under src/ names it."""
    import sys

    from edgepick import gate_spec

    (tmp_path / "my_gates.py").write_text(
        "from edgepick.gate_spec import GateSpec\n"
        "GATE = GateSpec(name='citation_rate_min', metric='citation_rate', direction='min',\n"
        "                format='{:.0%}', label={'en': 'citation rate', 'zh': '引用率'})\n",
        encoding="utf-8")
    info = tmp_path / "my_gates-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-gates\nVersion: 0.1\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text("[edgepick.gates]\ncitation = my_gates:GATE\n",
                                           encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    # a registry of the test's own, that reads the entry points again
    monkeypatch.setattr(gate_spec, "GATES", gate_spec.GATES.fresh())
    try:
        assert gate_table()["citation_rate_min"].metric == "citation_rate"
        s = CandidateSummary(candidate="c", model="/m/c.gguf", decode_tps=30.0,
                             quality_overall=0.8)
        s.figures["citation_rate"] = _rate(9, 10)
        sc = Scenario(name="cite", constraints=Constraints(peak_memory_max=None,
                                                           citation_rate_min=0.5))
        assert decide([s], sc).ranking[0].gates[0].metric == "citation_rate"
    finally:
        sys.modules.pop("my_gates", None)
