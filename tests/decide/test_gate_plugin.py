"""A gate on a new candidate metric from a package outside src/: one gate
table entry plus one producer, registered by an entry point. It is a scenario constraint,
gated by decide, judged by the sequential looks after each look, and shown in the report, with
no edit under src/."""

from __future__ import annotations

import pytest

from edgepick import gate_spec

PLUGIN = '''
from edgepick.gate_spec import GateSpec
from edgepick.records.decision import Figure

# The producer: a reply that refused carries details["refused"] (the package's scorer sets it).
GATE = GateSpec(
    name="refusal_rate_max", metric="refusal_rate", direction="max", format="{:.1%}",
    interval="wilson", label={"en": "refusal rate", "zh": "拒答率"}, bounds=(0, 1),
    item_values=lambda cand, ref: [float(bool(o.details.get("refused"))) for o in cand
                                   if "refused" in o.details] or None)
'''


@pytest.fixture
def refusal_plugin(tmp_path, monkeypatch):
    from plugin_dist import write_plugin

    pkg = write_plugin(tmp_path / "site", "refusal-gate", "refusal_gate", PLUGIN,
                       "edgepick.gates", {"refusal": "refusal_gate:GATE"})
    monkeypatch.syspath_prepend(str(pkg))
    # a registry of the test's own, that reads the entry points again
    monkeypatch.setattr(gate_spec, "GATES", gate_spec.GATES.fresh())


def _outcomes(refused: int, n: int):
    from edgepick.records.evaluation import ItemOutcome

    return [ItemOutcome(item_id=str(i), task="chat", output="x", finish_reason="stop", score=1.0,
                        correct=True, format_ok=True, badcase=False,
                        details={"refused": i < refused}) for i in range(n)]


def _summary(name: str, refused: int, n: int = 200):
    from edgepick.evaluate.intervals import wilson
    from edgepick.records.decision import CandidateSummary, Figure

    s = CandidateSummary(candidate=name, model=f"/m/{name}.gguf", decode_tps=30.0,
                         quality_overall=0.8)
    lo, hi = wilson(refused, n)
    s.figures["refusal_rate"] = Figure(value=refused / n, low=lo, high=hi, n=n, count=refused,
                                       method="wilson")
    return s


def test_a_plugin_gate_is_decided_judged_in_looks_and_reported(refusal_plugin, tmp_path):
    from edgepick.decide.decision import decide
    from edgepick.decide.scenarios import load_scenario
    from edgepick.decide.wording import describe
    from edgepick.evaluate.seq_gates import eval_metrics, judge
    from edgepick.plan.eval_gates import eval_gates
    from edgepick.report.tables import gates_table

    f = tmp_path / "sc.yaml"
    f.write_text("name: polite\nconstraints:\n  peak_memory_max: null\n  refusal_rate_max: 0.05\n",
                 encoding="utf-8")
    sc = load_scenario(str(f))
    # sequential stopping: the plan's eval stage gets the gate, and a look settles it
    assert "refusal_rate" in eval_metrics()
    (g,) = [g for g in eval_gates(sc) if g.metric == "refusal_rate"]
    assert judge(g, _outcomes(60, 200), None).verdict == "fail"
    assert judge(g, _outcomes(0, 200), None).verdict == "pass"
    # decide: gated with its interval
    rows = [_summary("good", 0), _summary("rude", 60)]
    d = decide(rows, sc)
    assert d.recommendation == "good"
    rude = next(r for r in d.ranking if r.candidate == "rude")
    assert rude.eliminated and rude.violations[0].constraint == "refusal_rate_max"
    # the report: its label in both languages
    d.texts = describe(d, rows, sc)
    assert any(r[1] == "拒答率" for r in gates_table(d, "zh")[1])
    assert any(r[1] == "refusal rate" for r in gates_table(d, "en")[1])
