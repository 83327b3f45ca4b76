"""What the plan's eval stage takes from the scenario: the gates the looks stop on, and the
deployment's sampling (plan/eval_gates.py)."""

from __future__ import annotations

from edgepick.decide.scenarios import load_scenario
from edgepick.plan.eval_gates import eval_gates, sampling_of


def test_the_quality_gates_of_the_scenario_with_their_scopes():
    sc = load_scenario("realtime_chat", {"constraints": {"format_compliance_min": 0.9,
                                                         "schema_valid_rate_min": 0.8}})
    gates = {g.metric: g for g in eval_gates(sc)}
    assert set(gates) == {"unacceptable_rate", "format_compliance", "schema_valid_rate"}
    un = gates["unacceptable_rate"]
    assert (un.limit, un.direction, un.routable) == (0.05, "max", True)
    assert "task" in un.scopes and "candidate" in un.scopes
    assert not gates["schema_valid_rate"].routable  # no hybrid routes around a tool gate


def test_weighted_quality_never_settles_early():
    sc = load_scenario("realtime_chat", {"constraints": {"quality_min": 0.5},
                                         "task_weights": {"qa": 2.0}})
    (q,) = [g for g in eval_gates(sc) if g.metric == "quality"]
    assert q.never_settles


def test_sampling_comes_from_the_scenario_and_greedy_stays_the_default():
    assert sampling_of(load_scenario("realtime_chat")) == (None, 1)
    sc = load_scenario("realtime_chat", {"sampling": {"temperature": 0.7, "repeat_penalty": 1.1,
                                                      "samples": 3}})
    assert sampling_of(sc) == ({"temperature": 0.7, "repeat_penalty": 1.1}, 3)
