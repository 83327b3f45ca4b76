"""The N-tier cascade's arithmetic (route/tiers.py) on scores and confidences made by hand."""

from __future__ import annotations

import pytest

from edgepick.route import tiers


def _data(n: int = 40):
    """Tier 0 right exactly when confident (conf 0.9), tier 1 right on half of the rest, the
    cloud always right: a cascade that trusts confidence beats random assignment."""
    tasks = ["a" if i % 4 < 2 else "b" for i in range(n)]
    kind = [(i // 4) % 4 for i in range(n)]  # each task and each half gets every kind
    s0 = [1.0 if k == 0 else 0.0 for k in kind]
    c0 = [0.9 if k == 0 else 0.2 for k in kind]
    s1 = [1.0 if k in (0, 1) else 0.0 for k in kind]
    c1 = [0.8 if k in (0, 1) else 0.3 for k in kind]
    cloud = [1.0] * n
    return tasks, [s0, s1, cloud], [c0, c1]


def test_an_item_stops_at_the_first_confident_tier_and_edge_only_never_leaves():
    conf = [[0.9, 0.1, None], [0.5, 0.7, 0.9]]
    th = [0.8, 0.6]
    assert [tiers.answering_tier(conf, th, i) for i in range(3)] == [0, 1, 1]
    assert tiers.answering_tier([[0.1], [0.1]], th, 0) == 2  # the cloud
    assert tiers.answering_tier([[0.1], [0.1]], th, 0, last_edge_only=True) == 1
    assert tiers.answering_tier([[None], [None]], [tiers.KEEP_ALL] * 2, 0) == 2  # no answer


def test_shares_sum_to_one_and_the_front_runs_from_no_cloud_to_all_cloud():
    tasks, scores, conf = _data()
    pts = tiers.front(scores, conf, list(range(len(tasks))))
    assert all(abs(sum(p.shares) - 1) < 1e-12 for p in pts)
    assert pts[0].shares[-1] == 0.0 and pts[-1].shares[-1] == 1.0
    assert pts[-1].quality == 1.0  # the cloud is always right
    # each cloud share's best: higher shares never do worse here
    assert [p.quality for p in pts] == sorted(p.quality for p in pts)


def test_calibrated_on_one_half_judged_on_the_other_against_random_at_equal_shares():
    tasks, scores, conf = _data(80)
    cal, held = tiers.split(tasks)
    assert not set(cal) & set(held) and len(cal) == len(held) == 40
    res = tiers.analyse(["small", "medium", "cloud"], scores, conf, tasks, shares=[0.5],
                        target_share=0.5)
    c = res.calibrated
    assert c is not None and c.shares[-1] <= 0.5 + 1e-12
    # tier 0 keeps its confident quarter, tier 1 the next quarter, the cloud the rest: perfect
    assert c.cascade == 1.0 and c.shares == pytest.approx([0.25, 0.25, 0.5])
    expected_random = 0.25 * 0.25 + 0.25 * 0.5 + 0.5 * 1.0
    assert c.random == pytest.approx(expected_random)
    assert c.verdict == "cascade better" and c.ci95[0] > 0
    assert res.tier_only == pytest.approx([0.25, 0.5, 1.0])
    assert (res.calibration_items, res.held_out_items) == (40, 40)


def test_uninformative_confidence_is_undetermined_not_better():
    tasks = ["a"] * 40
    s0 = [float(i % 2) for i in range(40)]
    scores = [s0, s0, [1.0] * 40]
    conf = [[0.5] * 40, [0.5] * 40]  # says nothing about which answer is right
    res = tiers.analyse(["s", "m", "c"], scores, conf, tasks, shares=[0.5], resamples=500)
    assert all(c.verdict != "cascade better" for c in res.comparisons)


def test_two_tiers_are_refused():
    with pytest.raises(ValueError, match="two edge tiers"):
        tiers.analyse(["e", "c"], [[1.0], [1.0]], [[0.5]], ["a"])


def test_a_router_model_is_scored_against_each_items_own_task_and_the_majority():
    from edgepick.evaluate.items import EvalItem
    from edgepick.route.router_model import accuracy, router_items

    items = [EvalItem(id=f"i{k}", task=t, prompt=f"q{k}", reference="x")
             for k, t in enumerate(["qa", "qa", "qa", "math"])]
    asked = router_items(items)
    assert [a.reference for a in asked] == ["qa", "qa", "qa", "math"]
    assert asked[0].labels == ["math", "qa"] and "q0" in asked[0].messages[1].content
    said = [{"text": t, "finish_reason": "stop", "generated_tokens": 1}
            for t in ("qa", "math", "qa", "math")]
    res = accuracy("r", items, said)
    assert (res.correct, res.n, res.per_task) == (3, 4, {"math": [1, 1], "qa": [2, 3]})
    assert (res.majority_task, res.majority) == ("qa", 0.75)
    assert res.ci95[0] < 0.75 < res.ci95[1]
