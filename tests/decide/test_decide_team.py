"""A team of edge models when no single one clears every task (issue 38 item 4): proposed within
the memory budget with its assignment, badcases under the mix, memory plan and swap cost; not
proposed when one model passes (unchanged) or when the team does not fit (said why); its
deploy.yaml loads with both models and the per-task routes."""

from __future__ import annotations

import pytest

from edgepick.decide.decision import decide
from edgepick.decide.deploy import build_deploy
from edgepick.decide.scenarios import Constraints, Scenario
from edgepick.decide.wording import describe
from edgepick.evaluate.intervals import wilson
from edgepick.records.decision import CandidateSummary, Figure, TaskQuality
from edgepick.records.deploy import DeployConfig

MIB = 1 << 20
SC = Scenario(name="t", constraints=Constraints(peak_memory_max=None, unacceptable_rate_max=0.05,
                                                decode_tps_min=10))


def rate(count: int, n: int) -> Figure:
    lo, hi = wilson(count, n)
    return Figure(value=count / n, low=lo, high=hi, n=n, count=count, method="wilson")


def summary(name: str, need_mib: int, load_ms: float | None, **tasks) -> CandidateSummary:
    """tasks: name=(unacceptable, badcases, n); the reference (cloud) is good on every task."""
    s = CandidateSummary(candidate=name, model=f"/m/{name}.gguf", decode_tps=30.0,
                         ttft_p50_ms=80.0, quality_overall=0.8, peak_need_bytes=need_mib * MIB,
                         load_ms=load_ms, reference="/m/ref.gguf", reference_name="ref")
    un = sum(u for u, _, _ in tasks.values())
    s.figures["unacceptable_rate"] = rate(un, sum(n for _, _, n in tasks.values()))
    for task, (u, bad, n) in tasks.items():
        extra = (bad - 2) / n * 1000
        s.tasks[task] = TaskQuality(n=n, score=1 - bad / n, unacceptable=rate(u, n),
                                    badcases=rate(bad, n), ref_badcases=rate(2, n),
                                    ref_unacceptable=rate(0, n), badcases_per_1000=extra,
                                    badcases_per_1000_ci95=[extra - 40, extra + 40])
    return s


def pair() -> list[CandidateSummary]:
    """Two small models, each better at a different task: neither passes both."""
    return [summary("chatty", 300, 150.0, chat=(0, 4, 200), math=(40, 60, 200)),
            summary("mathy", 200, 100.0, chat=(50, 70, 200), math=(0, 6, 200))]


def test_two_models_better_at_different_tasks_make_a_team(tmp_path):
    rows = pair()
    d = decide(rows, SC, 1024 * MIB)
    assert d.status == "team" and d.hybrid is None and d.recommendation == "chatty"
    p = d.team
    assert {r.task: r.route for r in p.routes} == {"chat": "chatty", "math": "mathy"}
    assert [(m.candidate, m.tasks, m.pin) for m in p.members] == [
        ("chatty", ["chat"], True), ("mathy", ["math"], True)]  # both fit resident
    assert p.badcases_per_1000 == pytest.approx((4 + 6) / 400 * 1000)
    assert p.low < p.badcases_per_1000 < p.high
    assert p.memory_bytes == 500 * MIB and p.fits and p.swaps_per_1000 == 0
    assert p.hybrid is not None and p.hybrid.cloud_share > 0  # the option beside it
    why = " ".join(d.explanation.why)
    assert "a team of 2 edge models" in why and "chatty for chat (50% of requests, pinned)" in why
    assert "chatty alone fails math" in why and "mathy alone fails chat" in why
    assert "the hybrid option" in why and "keeps every request on the device" in why

    cfg = build_deploy(d, rows, SC, device="local")
    again = DeployConfig.load(cfg.dump(tmp_path / "deploy.yaml"))
    assert again.schema_version == 2 and again.status == "team"
    assert [m.name for m in again.edge_models()] == ["chatty", "mathy"]
    assert again.route_for("chat") == "chatty" and again.route_for("math") == "mathy"
    assert again.edge_model(again.route_for("math")).path == "/m/mathy.gguf"
    assert again.check_memory().total == 500 * MIB and again.memory.budget_bytes == 1024 * MIB
    assert again.baseline.badcases_per_1000 == pytest.approx(25.0)


def test_a_tight_budget_loads_on_demand_and_states_the_swap_cost():
    d = decide(pair(), SC, 400 * MIB)  # 300 + 200 do not fit together; either fits alone
    p = d.team
    assert d.status == "team" and not any(m.pin for m in p.members)
    assert p.memory_bytes == 300 * MIB
    # shares 1/2 each, one on-demand slot: a load when consecutive requests differ
    assert p.swaps_per_1000 == pytest.approx(500)
    assert p.swap_ms_per_request == pytest.approx(0.25 * 150 + 0.25 * 100)
    assert "500 per 1000 requests, 62 ms of load time" in " ".join(d.explanation.why)
    rows = pair()
    rows[1].load_ms = None
    d = decide(rows, SC, 400 * MIB)
    assert d.team.swap_ms_per_request is None
    assert "unmeasured of load time" in " ".join(d.explanation.why)


def test_the_smallest_team_with_the_fewest_badcases_is_proposed():
    rows = pair() + [summary("chatty2", 250, 90.0, chat=(0, 2, 200), math=(45, 70, 200)),
                     summary("tiny", 100, 50.0, chat=(0, 9, 200), math=(60, 80, 200))]
    d = decide(rows, SC, 1024 * MIB)
    assert [m.candidate for m in d.team.members] == ["chatty2", "mathy"]


def test_a_single_model_that_passes_is_unchanged():
    rows = pair() + [summary("allround", 400, 120.0, chat=(0, 5, 200), math=(0, 8, 200))]
    d = decide(rows, SC, 1024 * MIB)
    assert d.status == "proven" and d.recommendation == "allround"
    assert d.team is None and d.team_refused is None
    assert build_deploy(d, rows, SC).schema_version == 1


def test_a_team_over_the_budget_is_not_proposed_and_says_why():
    d = decide(pair(), SC, 250 * MIB)  # chatty alone needs 300 MiB
    assert d.team is None and d.status == "hybrid"  # the hybrid decision, as before
    assert [m.candidate for m in d.team_refused.members] == ["chatty", "mathy"]
    assert d.explanation.why[-1] == ("a team (chatty, mathy) would serve every task type but is "
                                     "not proposed: its memory plan (300 MiB) exceeds the limit "
                                     "250 MiB")
    d = decide(pair(), SC)  # no device: nothing to check a team's memory against
    assert d.team is None and "no memory limit to check it against" in d.explanation.why[-1]


def test_the_report_shows_the_team_beside_the_other_options(tmp_path):
    from edgepick.report.writer import write_report

    rows = pair()
    d = decide(rows, SC, 1024 * MIB)
    d.texts = describe(d, rows, SC)
    write_report(rows, d, tmp_path, lang="both")
    md = (tmp_path / "report.en.md").read_text(encoding="utf-8")
    assert "**Recommendation:** chatty (team)" in md
    assert "| chat | chatty | 50% | 20 [" in md and "| pinned | 300 MiB | 150 |" in md
    assert "| overall | 2 | 100% | 25 [" in md and "500 MiB ≤ 1024 MiB" in md
    assert "the hybrid option" in md
    zh = (tmp_path / "report.zh.md").read_text(encoding="utf-8")
    assert "多模型组合" in zh and "常驻" in zh
    assert (tmp_path / "data" / "team_routes.csv").is_file()
