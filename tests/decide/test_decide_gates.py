"""Gates with intervals: pass / fail / undetermined, the sample-size estimate, the
recommendation's status (proven, provisional, hybrid, none) and the hybrid route."""

from __future__ import annotations

import pytest

from edgepick.decide.decision import decide
from edgepick.decide.gates import make_gate
from edgepick.decide.scenarios import Constraints, Scenario
from edgepick.evaluate.intervals import items_to_settle_rate, verdict, wilson
from edgepick.records.decision import CandidateSummary, Figure, TaskQuality


def rate(count: int, n: int) -> Figure:
    lo, hi = wilson(count, n)
    return Figure(value=count / n, low=lo, high=hi, n=n, count=count, method="wilson")


SC = Scenario(name="t", constraints=Constraints(peak_memory_max=None, unacceptable_rate_max=0.05,
                                                decode_tps_min=10))


def summary(name: str, unacc: tuple[int, int] | None, tasks: dict | None = None,
            decode: float = 30.0) -> CandidateSummary:
    s = CandidateSummary(candidate=name, model=f"/m/{name}.gguf", decode_tps=decode,
                         quality_overall=0.8, reference="/m/ref.gguf", reference_name="ref")
    if unacc is not None:
        s.figures["unacceptable_rate"] = rate(*unacc)
    for task, (bad_un, bad, ref_bad, n, *ref_un) in (tasks or {}).items():
        extra, p, r = (bad - ref_bad) / n * 1000, bad / n, ref_bad / n
        se = 1000 * ((p * (1 - p) + r * (1 - r)) / n) ** 0.5  # stands in for the paired bootstrap
        s.tasks[task] = TaskQuality(n=n, score=1 - bad / n, unacceptable=rate(bad_un, n),
                                    badcases=rate(bad, n), ref_badcases=rate(ref_bad, n),
                                    ref_unacceptable=rate(ref_un[0] if ref_un else 0, n),
                                    badcases_per_1000=extra,
                                    badcases_per_1000_ci95=[extra - 1.96 * se, extra + 1.96 * se])
    return s


@pytest.mark.parametrize("count, n, expected", [(0, 100, "pass"), (30, 100, "fail"),
                                                (2, 30, "undetermined")])
def test_verdicts_from_the_whole_interval(count, n, expected):
    g = make_gate("unacceptable_rate", rate(count, n), 0.05, "max")
    assert g.verdict == expected
    if expected == "undetermined":  # how many MORE items, from the observed rate
        assert g.items_to_settle == items_to_settle_rate(count, n, 0.05) - n
    assert (g.items_to_settle is not None) == (expected == "undetermined")
    assert verdict(None, None, None, 0.05, "max") == "unmeasured"
    assert verdict(20.0, 18.0, 22.0, 15, "min") == "pass" and verdict(12, 10, 14, 15, "min") == "fail"


def test_sample_size_estimate_is_the_smallest_n_that_settles_the_observed_rate():
    n = items_to_settle_rate(2, 30, 0.05)  # 6.7% observed against a 5% limit
    p = 2 / 30
    assert wilson(p * n, n)[0] > 0.05 >= wilson(p * (n - 1), n - 1)[0]
    assert items_to_settle_rate(0, 30, 0.05) == 73  # 0/73 is the first zero count under 5%
    assert wilson(0, 73)[1] <= 0.05 < wilson(0, 72)[1]
    assert items_to_settle_rate(5, 100, 0.05) is None  # sitting on the limit: nothing settles it


def test_status_proven_provisional_and_unmeasured_is_not_a_pass():
    d = decide([summary("a", (0, 200)), summary("b", (2, 30))], SC)
    assert d.status == "proven" and d.recommendation == "a"
    b = next(r for r in d.ranking if r.candidate == "b")
    assert b.status == "provisional" and not b.eliminated
    d = decide([summary("b", (2, 30))], SC)
    assert d.status == "provisional"
    why = " ".join(d.explanation.why)
    assert "undetermined" in why and "6.7% [1.8%, 21.3%]" in why
    assert f"about {items_to_settle_rate(2, 30, 0.05) - 30} more items" in why
    d = decide([summary("c", None)], SC)  # the unacceptable rate was never measured
    assert d.status == "provisional"
    assert "unacceptable-output rate was not measured" in " ".join(d.explanation.why)


def test_hybrid_routes_the_failing_task_to_the_cloud():
    tasks = {"classification": (0, 4, 5, 60), "math": (30, 35, 10, 60)}
    d = decide([summary("edge", (30, 120), tasks)], SC)
    assert d.status == "hybrid" and d.recommendation == "edge"
    routes = {r.task: r for r in d.hybrid.routes}
    assert routes["classification"].route == "edge" and routes["math"].route == "cloud"
    assert d.hybrid.cloud_share == pytest.approx(0.5)
    # edge classification at its own badcases, cloud math at the reference's
    assert routes["classification"].badcases_per_1000 == pytest.approx(4 / 60 * 1000)
    assert routes["math"].badcases_per_1000 == pytest.approx(10 / 60 * 1000)
    assert d.hybrid.badcases_per_1000 == pytest.approx((4 + 10) / 120 * 1000)
    assert d.hybrid.low < d.hybrid.badcases_per_1000 < d.hybrid.high
    sc_mix = SC.model_copy(update={"task_mix": {"classification": 3, "math": 1}})
    assert decide([summary("edge", (30, 120), tasks)], sc_mix).hybrid.cloud_share == \
        pytest.approx(0.25)


def test_no_hybrid_when_a_speed_gate_fails_and_the_nearest_is_named():
    tasks = {"classification": (0, 4, 5, 60), "math": (30, 35, 10, 60)}
    d = decide([summary("slow", (30, 120), tasks, decode=2.0)], SC)
    assert d.status == "none" and d.recommendation is None and d.closest == "slow"
    assert "nearest to passing: slow" in " ".join(d.explanation.why)


def test_decide_cli_json_and_deploy(store_path, cli, tmp_path):
    import json

    from decide_payloads import filled_store

    from edgepick.records.deploy import DeployConfig

    filled_store(store_path).close()
    out = tmp_path / "deploy.yaml"
    p = cli("decide", "--store", store_path, "--scenario", "realtime_chat", "--device",
            "raspberry-pi-5", "--json", "--deploy", str(out))
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["status"] in ("proven", "provisional") and data["deploy"] == str(out)
    for row in data["ranking"]:
        assert row["gates"] and all({"metric", "value", "low", "high", "limit", "verdict"} <= set(g)
                                    for g in row["gates"])
    un = next(g for g in data["gates"] if g["metric"] == "unacceptable_rate")
    assert un["low"] < un["value"] < un["high"] and un["limit"] == 0.05
    per_task = data["per_candidate"][data["recommendation"]]["badcases_per_1000"]
    assert {"value", "low", "high", "extra"} <= set(per_task["extraction"])
    cfg = DeployConfig.load(out)
    assert cfg.model.name == data["recommendation"] and cfg.status == data["status"]
    assert {g.metric for g in cfg.gates} >= {"unacceptable_rate", "ttft_p50_ms", "decode_tps"}
    assert {r.task for r in cfg.routes} == {"classification", "extraction", "qa"}
    p = cli("decide", "--store", store_path, "--deploy", str(out))  # a second write says so
    assert p.returncode == 0 and "replaced the existing" in p.stdout


def test_hybrid_plan_in_the_report(tmp_path):
    from edgepick.decide.wording import describe
    from edgepick.report.writer import write_report

    tasks = {"classification": (0, 4, 5, 60), "math": (30, 35, 10, 60)}
    rows = [summary("edge", (30, 120), tasks)]
    d = decide(rows, SC)
    d.texts = describe(d, rows, SC)
    write_report(rows, d, tmp_path, lang="both")
    md = (tmp_path / "report.en.md").read_text(encoding="utf-8")
    assert "**Recommendation:** edge (hybrid)" in md
    assert "| classification | edge | 50% | 67 [26, 159] | - |" in md
    assert "| math | cloud | 50% | 167 [93, 280] | - |" in md
    assert "| overall | cloud 50% | 100% | 117 [59, 174] |" in md
    zh = (tmp_path / "report.zh.md").read_text(encoding="utf-8")
    assert "混合方案" in zh and "（混合）" not in zh and "edge (混合)" in zh
    assert (tmp_path / "data" / "hybrid_routes.csv").is_file()
