"""`edgepick run` with the scenario's context lengths: the bench runs at them, and the stored
gates name the length each was read at (TTFT P99 at the P99 length, unmeasured where the bench
could not run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgepick.plan.loader import load_plan
from edgepick.plan.runner import run_plan
from edgepick.store import ResultStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow
def test_run_benches_and_gates_at_the_scenarios_lengths(tmp_path):
    lp = load_plan(EXAMPLES / "tiny.yaml")
    lp.plan.output = str(tmp_path / "run")
    lp.plan.bench.quiet_wait_s = 0  # waiting for a quiet host: tests/bench/test_host_load.py
    lp.plan.quantize = []
    lp.plan.eval.enabled = lp.plan.fidelity.enabled = lp.plan.report.enabled = False
    lp.plan.scenario.overrides = {
        "context_tokens": {"p50": 48, "p95": 80, "p99": 600},  # 600 + answer > n_ctx 512
        "output_tokens": {"p50": 8, "p95": 12},
        "constraints": {"ttft_p50_ms_max": 60000, "ttft_p99_ms_max": 60000,
                        "e2e_p99_ms_max": 60000}}
    res = run_plan(lp)
    with ResultStore(lp.store_path) as st:
        lengths = sorted({p["settings"]["prompt_tokens"] for _, p in st.items("bench")
                          if p.get("sweep") == "prompt_length"})
        gen = {p["settings"]["gen_tokens"] for _, p in st.items("bench")}
    assert lengths == [32, 48, 64, 80] and gen == {12}
    assert any("600-token prompt" in n and "unmeasured" in n for n in res.notes)
    gates = {g.metric: g for g in res.decision.ranking[0].gates}
    assert gates["ttft_p50_ms"].at_tokens == 48 and gates["ttft_p50_ms"].verdict != "unmeasured"
    assert gates["ttft_p99_ms"].at_tokens == 600 and gates["ttft_p99_ms"].verdict == "unmeasured"
    assert gates["e2e_p99_ms"].verdict == "unmeasured"
