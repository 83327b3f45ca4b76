"""The plan's bench measures at the scenario's context percentiles plus its answer length."""

from __future__ import annotations

from edgepick.decide.scenarios import Scenario
from edgepick.plan.bench_lengths import bench_lengths


def test_scenario_lengths_join_the_plans_and_a_length_that_cannot_fit_is_said():
    sc = Scenario(name="long", context_tokens={"p50": 256, "p95": 1500, "p99": 4000},
                  output_tokens={"p50": 40, "p95": 96})
    lengths, gen, notes = bench_lengths([128, 512], 48, 2048, sc)
    assert lengths == [128, 512, 256, 1500] and gen == 96
    assert len(notes) == 1 and "4000-token prompt" in notes[0] and "unmeasured" in notes[0]


def test_no_product_fields_keep_the_plans_bench():
    assert bench_lengths([512, 128], 48, 2048, Scenario(name="plain")) == ([512, 128], 48, [])
