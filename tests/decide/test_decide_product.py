"""The decision models the product (issue 26): a cloud is used only where it passes and helps,
the deployment's constraints bind the plan, gates read the product's lengths, and output length
is a gated figure."""

from __future__ import annotations

import pytest

from edgepick.decide.adapters import bench_adapter, eval_adapter
from edgepick.decide.decision import decide
from edgepick.decide.deploy import build_deploy
from edgepick.decide.scenarios import Constraints, Scenario
from edgepick.evaluate.intervals import wilson
from edgepick.records.decision import CandidateSummary, Figure, TaskQuality
from edgepick.records.evaluation import SampleOutcome
from decide_payloads import bench, cand_eval, eval_result, item

SC = Scenario(name="t", constraints=Constraints(peak_memory_max=None, unacceptable_rate_max=0.05,
                                                decode_tps_min=10))


def rate(count: int, n: int) -> Figure:
    lo, hi = wilson(count, n)
    return Figure(value=count / n, low=lo, high=hi, n=n, count=count, method="wilson")


def edge(math_ref_unacc: int = 0, paired: tuple[float, float] = (250.0, 560.0)) -> CandidateSummary:
    """An edge candidate that clears classification and fails math (30/60 unacceptable);
    the stand-in cloud (the reference) has `math_ref_unacc`/60 unacceptable on math."""
    s = CandidateSummary(candidate="edge", model="/m/e.gguf", decode_tps=30.0, ttft_p50_ms=100,
                         quality_overall=0.8, reference="/m/ref.gguf", reference_name="cloud-ref")
    s.figures["unacceptable_rate"] = rate(30, 120)
    s.tasks["classification"] = TaskQuality(
        n=60, score=0.9, unacceptable=rate(0, 60), badcases=rate(4, 60), ref_badcases=rate(5, 60),
        ref_unacceptable=rate(0, 60), badcases_per_1000=-16, badcases_per_1000_ci95=[-60, 30],
        metrics={"output_tokens_p50": 20})
    s.tasks["math"] = TaskQuality(
        n=60, score=0.4, unacceptable=rate(30, 60), badcases=rate(35, 60), ref_badcases=rate(10, 60),
        ref_unacceptable=rate(math_ref_unacc, 60), badcases_per_1000=416,
        badcases_per_1000_ci95=list(paired), ref_metrics={"output_tokens_p50": 100})
    return s


def test_cloud_that_passes_and_helps_gets_the_task():
    d = decide([edge()], SC)
    assert d.status == "hybrid"
    assert {r.task: r.route for r in d.hybrid.routes} == {"classification": "edge",
                                                          "math": "cloud"}


def test_the_hybrid_names_its_task_mix_in_each_language():
    from edgepick.decide.explain import explain

    d = decide([edge()], SC)
    mix = d.hybrid.mix_source
    assert mix in ("eval set proportions", "scenario task_mix")
    assert mix in explain(d, {"edge": edge()}, SC, "en").why[0]
    zh = {"eval set proportions": "评测集任务比例", "scenario task_mix": "场景任务比例"}[mix]
    assert zh in explain(d, {"edge": edge()}, SC, "zh").why[0]


def test_cloud_failing_the_task_gate_itself_makes_the_decision_none_naming_both_sides():
    d = decide([edge(math_ref_unacc=25)], SC)  # the stand-in cloud: 42% unacceptable on math
    assert d.status == "none" and d.recommendation is None and d.hybrid is None
    assert [u.task for u in d.unserved] == ["math"]
    u = d.unserved[0]
    assert u.edge_fails[0].verdict == "fail" and u.cloud_fails[0].verdict == "fail"
    why = " ".join(d.explanation.why)
    assert "math" in why and "the edge fails (unacceptable-output rate 50.0%" in why
    assert "the cloud cloud-ref fails too (unacceptable-output rate 41.7%" in why
    assert "what would have to change:" in why
    assert "math" in " ".join(build_explain_zh(d))


def build_explain_zh(d) -> list[str]:
    from edgepick.decide.explain import explain

    return explain(d, {"edge": edge(math_ref_unacc=25)}, SC, "zh").why


def test_cloud_no_better_by_the_paired_interval_is_no_route():
    d = decide([edge(paired=(-20.0, 560.0))], SC)  # the interval straddles 0: not shown better
    assert d.status == "none" and d.unserved[0].cloud_no_better
    assert "passes but is no better" in " ".join(d.explanation.why)


@pytest.mark.parametrize("update, named", [
    ({"network": "offline"}, "network: offline"),
    ({"edge_only_tasks": ["math"]}, "edge_only_tasks"),
    ({"max_cloud_share": 0.2}, "max_cloud_share"),
])
def test_deployment_constraints_bind_the_plan(update, named):
    d = decide([edge()], SC.model_copy(update=update))
    assert d.status == "none" and d.unserved[0].cloud_blocked == named
    assert named.split(":")[0] in " ".join(d.explanation.why)


def test_route_table_figures_latency_and_cost():
    sc = Scenario.model_validate(dict(SC.model_dump(), cloud={"price_per_1k_tokens": 0.5,
                                                               "latency_budget_ms": 900}))
    d = decide([edge()], sc)
    routes = {r.task: r for r in d.hybrid.routes}
    assert routes["classification"].latency_ms == pytest.approx(100 + 20 / 30 * 1000)
    assert routes["math"].latency_ms == 900
    # half the requests to the cloud, 100 answer tokens each at 0.5 per 1000 tokens
    assert d.hybrid.cost_per_1000 == pytest.approx(500 * 100 / 1000 * 0.5)


def test_deploy_yaml_carries_the_products_constraints():
    sc = Scenario(name="t", constraints=Constraints(peak_memory_max=None), network="offline",
                  edge_only_tasks=["notes"], lock_sampling=True,
                  sampling={"temperature": 0.7, "repeat_penalty": 1.1, "samples": 3})
    s = CandidateSummary(candidate="e", model="/m/e.gguf", decode_tps=30.0, quality_overall=0.8,
                         settings={"seed": 7})
    cfg = build_deploy(decide([s], sc), [s], sc)
    assert cfg.network == "offline" and cfg.edge_only_tasks == ["notes"] and cfg.lock_sampling
    assert cfg.sampling.temperature == 0.7 and cfg.sampling.repeat_penalty == 1.1
    assert cfg.sampling.seed == 7


def _bench(ptoks: int, ttft: float, p99: float, decode: float, peak: int):
    return bench("/m/e.gguf", settings={"prompt_tokens": ptoks, "gen_tokens": 64, "threads": 2},
                 key=f"e-{ptoks}",
                 metrics={"ttft_ms": dict(median=ttft, min=ttft * 0.9, max=ttft * 1.1, p99=p99),
                          "decode_tps": dict(median=decode, min=decode * 0.9, max=decode * 1.1),
                          "peak_rss_bytes": dict(max=peak)})


def _summary_from_bench(*rows) -> CandidateSummary:
    s = CandidateSummary(candidate="e", model="/m/e.gguf")
    for r in rows:
        bench_adapter(r, lambda *a, **k: s)
    return s


def test_gates_at_the_products_lengths_name_them_and_unmeasured_lengths_stay_unmeasured():
    s = _summary_from_bench(_bench(128, 100, 140, 30, 300 * 2**20),
                            _bench(1024, 700, 900, 25, 320 * 2**20),
                            _bench(3000, 2500, 3200, 20, 400 * 2**20))
    cons = Constraints(peak_memory_max="1GiB", ttft_p50_ms_max=800, ttft_p99_ms_max=3000,
                       e2e_p50_ms_max=5000, e2e_p99_ms_max=9000)
    sc = Scenario(name="long", constraints=cons,
                  context_tokens={"p50": 1024, "p95": 2000, "p99": 3000},
                  output_tokens={"p50": 60, "p95": 120})
    gates = {g.metric: g for g in decide([s], sc).ranking[0].gates}
    assert gates["ttft_p50_ms"].at_tokens == 1024 and gates["ttft_p50_ms"].value == 700
    assert gates["ttft_p99_ms"].at_tokens == 3000 and gates["ttft_p99_ms"].value == 3200
    assert gates["ttft_p99_ms"].verdict == "fail"
    assert gates["peak_memory"].at_tokens == 3000 and gates["peak_memory"].value == 400 * 2**20
    assert gates["e2e_p50_ms"].value == pytest.approx(700 + 60 / 25 * 1000)
    assert gates["e2e_p99_ms"].value == pytest.approx(3200 + 120 / 20 * 1000)
    # P95 at 2000 tokens was never benched: that gate is unmeasured, not read at another length
    sc2 = sc.model_copy(update={"constraints": Constraints(peak_memory_max=None,
                                                           e2e_p95_ms_max=5000)})
    g = decide([s], sc2).ranking[0].gates[0]
    assert g.metric == "e2e_p95_ms" and g.verdict == "unmeasured" and g.at_tokens == 2000
    # no context_tokens: the shortest prompt, as before, and named
    plain = Scenario(name="p", constraints=Constraints(peak_memory_max=None, ttft_p50_ms_max=800))
    g = decide([s], plain).ranking[0].gates[0]
    assert g.value == 100 and g.at_tokens == 128


def test_output_length_p50_p95_from_stored_tokens_and_its_gate():
    items = [item(f"i{i}", "chat", generated_tokens=n) for i, n in enumerate([10, 20, 30, 40, 200])]
    cand = cand_eval("/m/e.gguf", "e", {"chat": (0.9, 0.9)}, items=items)
    payload = eval_result([cand], ref_model="/m/ref.gguf")
    payload.reference.items = items[:2]
    s = CandidateSummary(candidate="e", model="/m/e.gguf")
    eval_adapter(payload, lambda *a, **k: s)
    assert s.figures["output_tokens_p50"].value == 30
    assert s.figures["output_tokens_p95"].value == pytest.approx(168.0)
    assert s.tasks["chat"].metrics["output_tokens_p95"] == pytest.approx(168.0)
    assert s.tasks["chat"].ref_metrics["output_tokens_p50"] == 15
    sc = Scenario(name="glasses", constraints=Constraints(peak_memory_max=None,
                                                          output_tokens_p95_max=80))
    r = decide([s], sc).ranking[0]
    assert r.eliminated and r.violations[0].constraint == "output_tokens_p95_max"
    assert r.task_gates["chat"][0].metric == "output_tokens_p95"
    assert "output length P95 168 tokens > limit 80 tokens" in r.reasons[0]


def test_sampled_items_keep_the_evals_per_item_intervals():
    """With k samples per item the eval's Rate carries the per-item interval; the decision
    reads it as stored, and format compliance counts each item's share of samples."""
    from edgepick.decide.adapters import rate_figure

    stored = {"count": 3, "n": 30, "value": 0.1, "low": 0.02, "high": 0.31}  # not Wilson(3, 30)
    fig = rate_figure(stored)
    assert (fig.value, fig.low, fig.high, fig.n) == (0.1, 0.02, 0.31, 30)
    same = [item(f"i{i}", "chat", format_ok=i > 0, generated_tokens=10) for i in range(10)]
    sample = SampleOutcome(seed=0, output="", finish_reason="stop", generated_tokens=10,
                           score=1.0, correct=True, format_ok=True, badcase=False)
    sampled = [o.model_copy(update={"shares": {"format_ok": 1.0 if o.format_ok else 0.0},
                                    "samples": [sample] * 3}) for o in same]
    from edgepick.decide.adapters import _format_figure

    one, three = (_format_figure(cand_eval("/m/e.gguf", "e", {"chat": (1, 1)}, items=its), None)
                  for its in (same, sampled))
    assert one.value == three.value == 0.9
    assert three.low == pytest.approx(one.low) and three.high == pytest.approx(one.high)


def test_the_default_jobs_routes_of_issue_26_are_no_longer_sent_to_the_cloud():
    """The default run's figures (issue 26): classification's cloud as unacceptable as the edge
    (14/17, 82.4% [59.0, 93.8]), yes/no's cloud worse than the edge (11 vs 10 badcases of 17)."""
    s = CandidateSummary(candidate="smollm2-Q8_0", model="/m/q8.gguf", decode_tps=30.0,
                         ttft_p50_ms=100, quality_overall=0.5, reference="/m/f16.gguf",
                         reference_name="smollm2-f16")
    s.figures["unacceptable_rate"] = rate(30, 51)
    s.tasks["classification"] = TaskQuality(
        n=17, unacceptable=rate(14, 17), ref_unacceptable=rate(14, 17), badcases=rate(14, 17),
        ref_badcases=rate(14, 17), badcases_per_1000=0.0, badcases_per_1000_ci95=[-176, 176])
    s.tasks["yes_no"] = TaskQuality(
        n=17, unacceptable=rate(2, 17), ref_unacceptable=rate(0, 17), badcases=rate(10, 17),
        ref_badcases=rate(11, 17), badcases_per_1000=-59, badcases_per_1000_ci95=[-294, 176])
    s.tasks["qa"] = TaskQuality(n=17, unacceptable=rate(0, 17), badcases=rate(2, 17),
                                ref_badcases=rate(2, 17), ref_unacceptable=rate(0, 17),
                                badcases_per_1000=0.0, badcases_per_1000_ci95=[-120, 120])
    d = decide([s], Scenario(name="realtime_chat", constraints=Constraints(
        peak_memory_max=None, unacceptable_rate_max=0.05)))
    assert d.hybrid is None and d.status == "none"
    by = {u.task: u for u in d.unserved}
    assert set(by) == {"classification", "yes_no"}
    assert by["classification"].cloud_fails and not by["classification"].cloud_no_better
    assert by["yes_no"].cloud_no_better and by["yes_no"].extra[0] < 0
