"""The cascade's curve, calibration and router comparison, and the edge/cloud consistency rate,
on per-item scores where the right answer is known by hand."""

from __future__ import annotations

import pytest

from edgepick.evaluate.items import EvalItem
from edgepick.route.confidence import FormatValidator, confidence
from edgepick.evaluate.intervals import wilson
from edgepick.route.path_agreement import consistency
from edgepick.route.curve import (by_task_scores, calibrate_quality, calibrate_share,
                                  cascade_curve, cascade_scores, comparisons, gap_recovered,
                                  random_scores)

EDGE = [1, 0, 1, 0, 1, 0, 1, 1, 0, 1]
CLOUD = [1, 1, 1, 1, 1, 1, 1, 1, 1, 0]
# The edge is unsure exactly where it is wrong: a good confidence signal.
CONF = [0.9, 0.2, 0.8, 0.1, 0.95, 0.3, 0.85, 0.7, 0.25, 0.6]


def test_curve_ends_equal_edge_only_and_cloud_only():
    pts = cascade_curve(EDGE, CLOUD, CONF)
    assert len(pts) == len(EDGE) + 1
    assert pts[0].cloud_share == 0 and pts[0].quality == sum(EDGE) / len(EDGE)
    assert pts[-1].cloud_share == 1 and pts[-1].quality == sum(CLOUD) / len(CLOUD)
    # The threshold at each point escalates exactly the items below it.
    for p in pts:
        assert sum(c < p.threshold for c in CONF) == p.n_cloud


def test_good_confidence_beats_random_and_reaches_the_cloud_quality_early():
    pts = cascade_curve(EDGE, CLOUD, CONF)
    at40 = next(p for p in pts if p.n_cloud == 4)
    assert at40.quality == 1.0  # the four wrong answers are the four least confident
    assert gap_recovered(pts) > 0.5
    cal = calibrate_quality(pts, 1.0)
    assert cal.cloud_share == pytest.approx(0.4) and cal.reachable
    assert all(c < cal.threshold for c, e in zip(CONF, EDGE) if e == 0)
    rows = comparisons(EDGE, CLOUD, CONF, ["a"] * 10, shares=[0.4], resamples=500)
    vs_random = next(r for r in rows if r.other == "random")
    assert vs_random.diff > 0 and vs_random.ci95[0] > 0 and vs_random.verdict == "cascade better"


def test_useless_confidence_is_not_called_better_than_a_coin():
    flat = [0.5] * 10
    rows = comparisons(EDGE, CLOUD, flat, ["a"] * 10, shares=[0.3], resamples=500)
    vs_random = next(r for r in rows if r.other == "random")
    assert vs_random.verdict != "cascade better"


def test_calibration_for_a_share_and_an_unreachable_quality():
    pts = cascade_curve(EDGE, CLOUD, CONF)
    cal = calibrate_share(pts, 0.3)
    assert cal.cloud_share == pytest.approx(0.3)
    assert sum(c < cal.threshold for c in CONF) == 3
    assert not calibrate_quality(pts, 1.01).reachable


def test_fractional_shares_and_routers_meet_the_share_exactly():
    for s in (0.0, 0.15, 0.5, 1.0):
        cas = cascade_scores(EDGE, CLOUD, CONF, s)
        rnd = random_scores(EDGE, CLOUD, s)
        bt = by_task_scores(EDGE, CLOUD, ["x"] * 5 + ["y"] * 5, s)
        for scores in (cas, rnd, bt):  # each router moves exactly s of the items' weight
            moved = sum(abs(a - e) for a, e in zip(scores, EDGE))
            full = sum(abs(c - e) for c, e in zip(CLOUD, EDGE))
            assert moved <= full + 1e-9
    assert cascade_scores(EDGE, CLOUD, CONF, 1.0) == [float(c) for c in CLOUD]


def test_confidence_methods_and_missing_logprobs():
    lps = [-0.1, -2.0, -0.1, -0.1]
    assert confidence(lps, "min") == pytest.approx(0.1353, abs=1e-3)
    assert confidence(lps, "first_k", k=1) == pytest.approx(0.905, abs=1e-3)
    assert confidence(lps, "mean") < confidence(lps, "first_k", k=1)
    assert confidence([], "mean") is None and confidence(None) is None
    # No confidence escalates first: an empty answer is the least trustworthy.
    pts = cascade_curve([1, 0], [1, 1], [0.9, None])
    assert pts[1].quality == 1.0


def test_format_validator():
    v = FormatValidator.model_validate({"kind": "json", "schema": {
        "type": "object", "required": ["name"]}})
    assert v.check('Sure: {"name": "Ann"}')[0]
    assert not v.check('{"age": 3}')[0]
    assert not v.check("no json here")[0]
    assert FormatValidator(kind="labels", labels=["positive", "negative"]).check("Negative.")[0]
    assert not FormatValidator(kind="regex", pattern=r"^\d+$").check("twelve")[0]


def _item(i, task, **kw):
    base = {"id": f"i{i}", "task": task, "prompt": "p"}
    base.update(kw)
    return EvalItem.model_validate(base)


def test_consistency_same_label_keys_types_number_and_alert():
    items = [_item(1, "classification", reference="pos", labels=["pos", "neg"]),
             _item(2, "extraction", reference={"a": 1}),
             _item(3, "math", reference=4),
             _item(4, "qa", reference="Paris"),
             _item(5, "extraction", reference={"a": 1})]
    edge = ["It is pos.", '{"a": 1, "b": "x"}', "The answer is 4", "Paris", '{"a": "1"}']
    cloud = ["pos", '{"b": "y", "a": 2}', "4.0", "巴黎", '{"a": 1}']
    rep = consistency(items, edge, cloud)
    same = {r.item_id: r.same for r in rep.items}
    assert same == {"i1": True, "i2": True, "i3": True, "i4": False, "i5": False}
    assert rep.disagreements == 2 and rep.alert and rep.rate == pytest.approx(0.4)
    assert rep.ci95[0] < 0.4 < rep.ci95[1]
    lo, hi = wilson(0, 100)
    assert lo == pytest.approx(0) and 0 < hi < 0.05


def test_route_eval_never_escalates_edge_only_tasks():
    """Issue 26 item 5: with `yes_no` edge-only, the cascade escalates only the other items, the
    curve stops at their share, and by-task routing never picks the private task either."""
    from edgepick.records.model_ref import ModelRef
    from edgepick.route.route_eval import RouteEvalRequest, analyse

    items = [EvalItem(id=f"q{i}", task="yes_no" if i < 2 else "classification",
                      prompt=f"q{i}?", reference="yes" if i < 2 else "a",
                      labels=None if i < 2 else ["a", "b"]) for i in range(4)]
    # the edge is wrong on the private items and unsure of them: a cascade would escalate them
    edge = [{"text": "no", "token_logprobs": [-3.0]}, {"text": "no", "token_logprobs": [-3.0]},
            {"text": "b", "token_logprobs": [-0.5]}, {"text": "a", "token_logprobs": [-0.1]}]
    cloud = [{"text": "yes"}, {"text": "yes"}, {"text": "a"}, {"text": "a"}]
    ref = ModelRef.endpoint("http://127.0.0.1:9/v1#m")
    req = RouteEvalRequest(items=items, data="d", edge=ref, cloud=ref, resamples=50,
                           shares=[0.25, 0.5, 0.75])
    free = analyse(req, edge, cloud, {})
    assert free.max_cloud_share == 1.0 and free.curve[-1].cloud_share == 1.0
    assert free.curve[2].quality == 0.75  # the two private items escalated first, and fixed
    private = analyse(req.model_copy(update={"edge_only_tasks": ["yes_no"]}), edge, cloud, {})
    assert private.max_cloud_share == 0.5 and private.edge_only_tasks == ["yes_no"]
    assert [p.cloud_share for p in private.curve] == [0.0, 0.25, 0.5]
    assert private.curve[-1].quality == 0.5  # only the classification item could be fixed
    assert {c.cloud_share for c in private.comparisons} == {0.25, 0.5}
    by_task = [c for c in private.comparisons if c.other == "by_task" and c.cloud_share == 0.5]
    assert by_task[0].other_quality == 0.5  # it sent classification, never yes_no
