"""The memory gate and the report's predicted-vs-measured compare like with like (issue 24 item 3):
the measured need (anonymous memory + file pages read, bench/need.py) against fit's need total;
VmHWM, which counts mapped pages never read again, only for a bench stored before the need was
measured, and then the gate says so."""

import pytest

from edgepick.decide.adapters import bench_adapter, fit_adapter
from edgepick.decide.gates import candidate_gates, gate_text
from edgepick.decide.scenarios import Constraints, ContextTokens, Scenario
from edgepick.records.decision import CandidateSummary
from edgepick.decide.decision import decide
from edgepick.decide.wording import describe
from edgepick.report.tables import predicted_table
from decide_payloads import bench, fit

MiB = 2**20
BUDGET = 250 * MiB  # between the need (200 MiB) and VmHWM (300 MiB)


def _bench(need: bool):
    metrics = {"decode_tps": dict(median=40.0, min=39.0, max=41.0),
               "peak_rss_bytes": dict(max=300.0 * MiB)}
    if need:
        metrics.update({"peak_rss_anon_bytes": dict(max=150.0 * MiB),
                        "file_read_bytes": dict(max=50.0 * MiB),
                        "peak_need_bytes": dict(max=200.0 * MiB)})
    return bench("/m/q4.gguf", settings={"prompt_tokens": 128, "gen_tokens": 64,
                                         "concurrency": 1}, metrics=metrics)


def _summary(need: bool) -> CandidateSummary:
    s = CandidateSummary(candidate="q4", model="/m/q4.gguf")
    bench_adapter(_bench(need), lambda *a, **k: s)
    return s


def _memory_gate(s: CandidateSummary, sc: Scenario):
    return next(g for g in candidate_gates(s, sc, BUDGET) if g.metric == "peak_memory")


SCENARIOS = [Scenario(name="headline", constraints=Constraints(peak_memory_max="budget")),
             Scenario(name="at_length", constraints=Constraints(peak_memory_max="budget"),
                      context_tokens=ContextTokens(p50=128))]


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda sc: sc.name)
def test_vmhwm_above_the_need_passes_a_budget_between_them(sc):
    s = _summary(need=True)
    assert s.peak_rss_bytes == 300 * MiB and s.peak_need_bytes == 200 * MiB
    g = _memory_gate(s, sc)
    assert (g.verdict, g.value, g.basis) == ("pass", 200 * MiB, "need")
    assert gate_text(g) == "200 MiB (need)"


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda sc: sc.name)
def test_a_row_stored_before_the_need_falls_back_to_vmhwm_and_says_so(sc):
    s = _summary(need=False)
    assert s.peak_need_bytes is None
    g = _memory_gate(s, sc)
    assert (g.verdict, g.value, g.basis) == ("fail", 300 * MiB, "VmHWM")
    assert gate_text(g) == "300 MiB (VmHWM, no need stored)"


def test_unmeasured_memory_has_no_basis():
    s = CandidateSummary(candidate="q4", model="/m/q4.gguf")
    g = _memory_gate(s, SCENARIOS[0])
    assert g.verdict == "unmeasured" and g.basis is None


@pytest.mark.parametrize("need", [True, False])
def test_predicted_vs_measured_compares_fit_need_with_measured_need(need):
    s = _summary(need)
    fit_adapter(fit("/m/q4.gguf", 190 * MiB), lambda *a, **k: s)
    d = decide([s], SCENARIOS[0])
    header, rows = predicted_table([s], describe(d, [s], SCENARIOS[0]), "en")
    row = dict(zip(header, rows[0]))
    assert row["Memory need (predicted)"] == "190 MiB"
    assert row["VmHWM (for reference)"] == "300 MiB"
    if need:
        assert row["Memory need (measured)"] == "200 MiB"
        assert rows[0][3] == f"{200 / 190:.2f}"  # the memory ratio
    else:
        assert row["Memory need (measured)"] == "300 MiB (VmHWM)"
        assert rows[0][3] == f"{300 / 190:.2f}"
