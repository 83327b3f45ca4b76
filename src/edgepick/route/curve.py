"""The quality-versus-cloud-share curve of a confidence cascade, its threshold calibration, and
the comparison with by-task and random routing at equal cloud share (seed 001 §6.3, seed 000
§6.3). Pure arithmetic over per-item scores, so it is exact and testable without a model.

The random router is taken in expectation: at cloud share s each item contributes
(1 − s)·edge + s·cloud, which is what a fair coin gives on average, with no coin noise in the
comparison. Differences carry a paired bootstrap interval over items.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from pydantic import BaseModel

from edgepick.evaluate.gap import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, paired_bootstrap

DEFAULT_SHARES = (0.1, 0.2, 0.3, 0.5)


class CurvePoint(BaseModel):
    cloud_share: float
    quality: float
    threshold: float | None  # escalate when confidence < threshold; None: edge only
    n_cloud: int


class Comparison(BaseModel):
    """Cascade against another router at one cloud share; diff = cascade − other."""

    cloud_share: float
    cascade: float
    other: str  # "random" | "by_task"
    other_quality: float
    diff: float
    ci95: list[float]
    verdict: str  # "cascade better" | "cascade worse" | "undetermined"


class Calibration(BaseModel):
    target: str  # "share" | "quality"
    wanted: float
    threshold: float | None
    cloud_share: float
    quality: float
    reachable: bool = True


def escalation_order(conf: list[float | None]) -> list[int]:
    """Items in the order a rising threshold sends them to the cloud: no confidence first (an
    empty answer), then lowest confidence; ties by position, so the order is reproducible."""
    return sorted(range(len(conf)), key=lambda i: (conf[i] is not None, conf[i] or 0.0, i))


def _threshold_between(lo: float | None, hi: float | None) -> float:
    """A threshold that escalates `lo` and keeps `hi` on the edge (None: no confidence)."""
    if lo is None or hi is None:
        return 0.0 if hi is not None or lo is None else float(np.nextafter(lo, 2.0))
    return (lo + hi) / 2


def cascade_curve(edge: list[float], cloud: list[float], conf: list[float | None]) -> list[CurvePoint]:
    """One point per number of escalated items, 0..n: the ends are exactly the edge-only and the
    cloud-only mean scores."""
    n = len(edge)
    order = escalation_order(conf)
    total = float(sum(edge))
    points = [CurvePoint(cloud_share=0.0, quality=total / n if n else 0.0,
                         threshold=_threshold_between(None, conf[order[0]]) if n else None,
                         n_cloud=0)]
    for k, i in enumerate(order, 1):
        total += cloud[i] - edge[i]
        nxt = conf[order[k]] if k < n else None
        thr = _threshold_between(conf[i], nxt) if k < n else float(np.nextafter(1.0, 2.0))
        points.append(CurvePoint(cloud_share=k / n, quality=total / n, threshold=thr, n_cloud=k))
    if n:  # the ends, summed afresh rather than accumulated, so they equal the plain means
        points[-1].quality = float(sum(cloud)) / n
    return points


def cascade_scores(edge: list[float], cloud: list[float], conf: list[float | None],
                   share: float) -> list[float]:
    """Per-item scores when the lowest-confidence `share` of items goes to the cloud (a fraction
    of an item at the boundary is split, so any share is reachable exactly)."""
    n = len(edge)
    exact = share * n
    out = list(map(float, edge))
    for rank, i in enumerate(escalation_order(conf)):
        w = min(1.0, max(0.0, exact - rank))
        if w <= 0:
            break
        out[i] = (1 - w) * edge[i] + w * cloud[i]
    return out


def random_scores(edge: list[float], cloud: list[float], share: float) -> list[float]:
    return [(1 - share) * e + share * c for e, c in zip(edge, cloud)]


def by_task_scores(edge: list[float], cloud: list[float], tasks: list[str],
                   share: float, fixed: set[str] | frozenset[str] = frozenset()) -> list[float]:
    """Whole task types to the cloud, the ones that gain most per item first (measured on these
    same items, so it flatters by-task routing), the last one split to meet the share. `fixed`
    task types stay on the edge (edge-only)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(tasks):
        if t not in fixed:
            groups[t].append(i)
    gain = {t: sum(cloud[i] - edge[i] for i in ix) / len(ix) for t, ix in groups.items()}
    out = list(map(float, edge))
    left = share * len(edge)
    for t in sorted(groups, key=lambda t: (-gain[t], t)):
        if left <= 0:
            break
        w = min(1.0, left / len(groups[t]))
        for i in groups[t]:
            out[i] = (1 - w) * edge[i] + w * cloud[i]
        left -= len(groups[t])
    return out


def compare(cascade: list[float], other: list[float], share: float, name: str,
            resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Comparison:
    ci, _ = paired_bootstrap(cascade, other, resamples, seed)  # mean(cascade) − mean(other)
    c, o = float(np.mean(cascade)), float(np.mean(other))
    verdict = ("cascade better" if ci[0] > 0 else "cascade worse" if ci[1] < 0
               else "undetermined")
    return Comparison(cloud_share=share, cascade=c, other=name, other_quality=o, diff=c - o,
                      ci95=ci, verdict=verdict)


def comparisons(edge, cloud, conf, tasks, shares=DEFAULT_SHARES, resamples=BOOTSTRAP_RESAMPLES,
                seed=BOOTSTRAP_SEED, fixed=frozenset()) -> list[Comparison]:
    out = []
    for s in shares:
        cas = cascade_scores(edge, cloud, conf, s)
        out.append(compare(cas, random_scores(edge, cloud, s), s, "random", resamples, seed))
        out.append(compare(cas, by_task_scores(edge, cloud, tasks, s, fixed), s, "by_task",
                           resamples, seed))
    return out


def gap_recovered(points: list[CurvePoint]) -> float | None:
    """Average share of the edge→cloud quality gap the cascade recovers over all cloud shares
    (RouteLLM's APGR); a random router scores 0.5, an oracle close to 1."""
    lo, hi = points[0].quality, points[-1].quality
    if hi == lo:
        return None
    xs = [p.cloud_share for p in points]
    ys = [(p.quality - lo) / (hi - lo) for p in points]
    return float(np.trapezoid(ys, xs))


def calibrate_share(points: list[CurvePoint], share: float) -> Calibration:
    """The threshold that sends `share` of requests to the cloud on this data: the same
    quantile-of-the-router-score rule RouteLLM's calibrate_threshold uses."""
    p = min(points, key=lambda p: (abs(p.cloud_share - share), p.cloud_share))
    return Calibration(target="share", wanted=share, threshold=p.threshold,
                       cloud_share=p.cloud_share, quality=p.quality)


def calibrate_quality(points: list[CurvePoint], quality: float) -> Calibration:
    """The smallest cloud share whose quality reaches `quality`."""
    for p in points:
        if p.quality >= quality - 1e-12:
            return Calibration(target="quality", wanted=quality, threshold=p.threshold,
                               cloud_share=p.cloud_share, quality=p.quality)
    best = max(points, key=lambda p: p.quality)
    return Calibration(target="quality", wanted=quality, threshold=best.threshold,
                       cloud_share=best.cloud_share, quality=best.quality, reachable=False)
