"""A cascade over N tiers (e.g. small → medium → cloud; seed 003 §5.2/§6.1: a small model takes
what it can and hands the rest on; seed 001 §6.3): each edge step keeps its answer when its
confidence reaches the step's threshold, else hands the request to the next tier; the last tier
(the cloud) answers the rest. Pure arithmetic over per-item scores and confidences.

Thresholds are calibrated on one half of the items and judged on the other (held-out) half,
each half taking every other item of each task type, so the figures a deploy is chosen by are
not the ones its thresholds were fitted to. The random router assigns each held-out item to
tier k with the cascade's own shares p_k, taken in expectation (each item contributes
Σ p_k·score_k), and the difference carries a paired bootstrap interval over items, as the
two-tier comparison in curve.py does.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
from pydantic import BaseModel

from edgepick.evaluate.gap import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from edgepick.route.curve import DEFAULT_SHARES, compare

# confidences are probabilities in (0, 1]; these stay finite so results store as JSON
KEEP_ALL = 0.0  # a step that keeps every answer it has
PASS_ALL = float(np.nextafter(1.0, 2.0))  # a step that hands every request on
# thresholds tried per step: the confidences' quantiles; a grid of N per step costs N^(steps)
QUANTILES = 20


class TierPoint(BaseModel):
    """One setting of the steps' thresholds: each tier's share of requests and the quality."""

    thresholds: list[float]  # per edge step; KEEP_ALL keeps all, PASS_ALL passes all
    shares: list[float]  # per tier, the cloud last; they sum to 1
    quality: float


class TierComparison(BaseModel):
    """At a cloud-share cap: thresholds calibrated on the calibration half, judged held out."""

    cloud_share_cap: float
    thresholds: list[float]
    shares: list[float]  # realised on the held-out half
    cascade: float  # held-out quality
    random: float  # random assignment with the same shares, in expectation
    diff: float
    ci95: list[float]
    verdict: str  # "cascade better" | "cascade worse" | "undetermined"


class TierResult(BaseModel):
    models: list[str]  # tier labels in order, the cloud last
    tier_only: list[float]  # quality when one tier answers everything
    calibration_items: int
    held_out_items: int
    front: list[TierPoint]  # on all items: the best quality at each cloud share
    comparisons: list[TierComparison]
    calibrated: TierComparison | None = None  # at the asked cloud share (--target-share)


def answering_tier(conf: list[list[float | None]], thresholds: list[float], i: int,
                   last_edge_only: bool = False) -> int:
    """The tier that answers item i: the first edge step whose confidence reaches its threshold
    (no confidence, an empty answer, never does), else the cloud. An edge-only item stops at
    the last edge tier instead of leaving the device."""
    steps = len(thresholds)
    for k in range(steps):
        c = conf[k][i]
        if c is not None and c >= thresholds[k]:
            return k
    return steps - 1 if last_edge_only else steps


def evaluate(scores: list[list[float]], conf: list[list[float | None]], thresholds: list[float],
             idx: list[int], edge_only: set[int] = frozenset()) -> tuple[list[float], list[float]]:
    """(each tier's share of `idx`, the per-item scores the cascade gets on `idx`)."""
    counts = [0] * len(scores)
    got = []
    for i in idx:
        k = answering_tier(conf, thresholds, i, i in edge_only)
        counts[k] += 1
        got.append(scores[k][i])
    n = max(1, len(idx))
    return [c / n for c in counts], got


def candidate_thresholds(conf: list[float | None], idx: list[int]) -> list[float]:
    """What one step's threshold is tried at: keep all, pass all, and the confidences'
    quantiles on these items."""
    vals = sorted({c for c in (conf[i] for i in idx) if c is not None})
    if len(vals) > QUANTILES:
        vals = sorted({float(np.quantile(vals, q)) for q in np.linspace(0, 1, QUANTILES)})
    return [KEEP_ALL, *vals, PASS_ALL]  # a threshold at a value keeps that answer


def grid(conf: list[list[float | None]], idx: list[int]) -> list[tuple[float, ...]]:
    return list(itertools.product(*(candidate_thresholds(c, idx) for c in conf)))


def front(scores, conf, idx, edge_only=frozenset()) -> list[TierPoint]:
    """For each cloud share the grid reaches, its best quality (fewer requests past the first
    tier on a tie): quality against the share answered at each tier."""
    best: dict[float, TierPoint] = {}
    for th in grid(conf, idx):
        shares, got = evaluate(scores, conf, list(th), idx, edge_only)
        p = TierPoint(thresholds=list(th), shares=shares, quality=float(np.mean(got)))
        key = round(shares[-1], 9)
        cur = best.get(key)
        if cur is None or (p.quality, p.shares[0]) > (cur.quality, cur.shares[0]):
            best[key] = p
    return [best[k] for k in sorted(best)]


def split(tasks: list[str]) -> tuple[list[int], list[int]]:
    """(calibration, held-out): every other item of each task type, in the set's order."""
    seen: dict[str, int] = defaultdict(int)
    cal, held = [], []
    for i, t in enumerate(tasks):
        (cal if seen[t] % 2 == 0 else held).append(i)
        seen[t] += 1
    return cal, held


def calibrate(cal_front: list[TierPoint], cap: float) -> list[float]:
    """The thresholds with the best calibration-half quality (`cal_front`, that half's front)
    whose cloud share is at most `cap` (ties: more requests kept by the first tiers)."""
    pts = [p for p in cal_front if p.shares[-1] <= cap + 1e-12]
    if not pts:  # nothing reaches the cap: send the least to the cloud
        pts = cal_front[:1]
    return max(pts, key=lambda p: (p.quality, p.shares[0])).thresholds


def judge(scores, conf, thresholds, held, cap, edge_only=frozenset(),
          resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED) -> TierComparison:
    shares, got = evaluate(scores, conf, thresholds, held, edge_only)
    rnd = [sum(p * scores[k][i] for k, p in enumerate(shares)) for i in held]
    c = compare(got, rnd, shares[-1], "random", resamples, seed)
    return TierComparison(cloud_share_cap=cap, thresholds=thresholds, shares=shares,
                          cascade=c.cascade, random=c.other_quality, diff=c.diff, ci95=c.ci95,
                          verdict=c.verdict)


def analyse(models: list[str], scores: list[list[float]], conf: list[list[float | None]],
            tasks: list[str], shares=DEFAULT_SHARES, target_share: float | None = None,
            edge_only_tasks: frozenset[str] = frozenset(), resamples=BOOTSTRAP_RESAMPLES,
            seed=BOOTSTRAP_SEED) -> TierResult:
    """`scores[k][i]`: tier k's score on item i (the cloud last); `conf[k][i]`: edge tier k's
    confidence (None: no answer)."""
    if len(scores) < 3 or len(conf) != len(scores) - 1:
        raise ValueError("a tiered cascade needs at least two edge tiers and the cloud")
    n = len(tasks)
    private = {i for i, t in enumerate(tasks) if t in edge_only_tasks}
    cal, held = split(tasks)
    caps = sorted(set(shares) | ({target_share} if target_share is not None else set()))
    cal_front = front(scores, conf, cal, private)  # the grid is walked once for every cap
    comps = [judge(scores, conf, calibrate(cal_front, s), held, s, private,
                   resamples, seed) for s in caps]
    return TierResult(
        models=models, tier_only=[float(np.mean(s)) for s in scores],
        calibration_items=len(cal), held_out_items=len(held),
        front=front(scores, conf, list(range(n)), private), comparisons=comps,
        calibrated=next((c for c in comps if c.cloud_share_cap == target_share), None))
