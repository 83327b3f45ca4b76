"""Tool-call figures downstream of eval: the scenario's gates with Wilson intervals, and the
report's tool-calling table per candidate and quant type."""

from __future__ import annotations

from edgepick.decide.adapters import eval_adapter
from edgepick.decide.gates import candidate_gates
from edgepick.decide.scenarios import load_scenario
from edgepick.records.decision import CandidateSummary
from edgepick.report.tool_section import tool_table
from decide_payloads import cand_eval, eval_result


def summary(name: str, quant: str, choice: float, valid: float, n: int = 71) -> CandidateSummary:
    s = CandidateSummary(candidate=name, model=f"/m/{name}.gguf", quant=quant)
    metrics = {"tool_choice_accuracy": choice, "tool_choice_accuracy_n": n,
               "schema_valid_rate": valid, "schema_valid_rate_n": 50,
               "guard_refused_rate": 0.1, "guard_refused_rate_n": 50}
    payload = eval_result([cand_eval(s.model, name, {"tool_call": (choice, choice)},
                                     task_fields={"n": n, "metrics": metrics})])
    eval_adapter(payload, lambda model, nm=None, backend=None: s if model == s.model else None)
    return s


def gate(s: CandidateSummary, metric: str):
    gates = candidate_gates(s, load_scenario("agent_tool_calling"), None)
    return next(g for g in gates if g.metric == metric)


def test_the_scenario_gates_on_tool_choice_and_schema_validity_with_intervals():
    good, bad, close = summary("a", "F16", 69 / 71, 50 / 50), summary("b", "Q4_0", 20 / 71, 0.5), \
        summary("c", "Q8_0", 58 / 71, 49 / 50)
    g = gate(good, "tool_choice_accuracy")
    assert g.verdict == "pass" and g.low > 0.8 and g.limit == 0.8
    assert gate(bad, "tool_choice_accuracy").verdict == "fail"
    assert gate(bad, "schema_valid_rate").verdict == "fail"
    u = gate(close, "tool_choice_accuracy")
    assert u.verdict == "undetermined" and u.low < 0.8 < u.high and u.items_to_settle


def test_without_tool_items_the_gates_are_unmeasured():
    s = CandidateSummary(candidate="x", model="/m/x.gguf")
    assert gate(s, "tool_choice_accuracy").verdict == "unmeasured"


def test_report_table_per_candidate_and_quant_type():
    rows = [summary("smollm2-f16", "F16", 0.5, 0.9), summary("smollm2-q4", "Q4_0", 0.4, 0.8),
            CandidateSummary(candidate="no-tools", model="/m/n.gguf")]
    for lang in ("en", "zh"):
        title, header, body, note = tool_table(rows, lang)
        assert len(body) == 2 and [r[1] for r in body] == ["F16", "Q4_0"]
        assert len(header) == len(body[0]) and note
    _, header, body, _ = tool_table(rows, "en")
    cells = dict(zip(header, body[0]))
    assert cells["tool choice"].startswith("50.0% [") and cells["arguments"] == "-"
    assert cells["guard refused"].startswith("10.0%")
    assert tool_table(rows[2:], "en") is None
