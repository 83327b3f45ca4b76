"""The gap to the reference: per task type, per difficulty and overall, with 95% intervals.

Gaps use a paired percentile bootstrap: each resample draws item indices with replacement and
takes the same items for the candidate and the reference, so the spread of the items'
difficulty cancels out and only the disagreement between the models remains. Badcases are
counted item by item from the pass rule and the unacceptable reasons (never from a score gap),
each rate with its Wilson interval; the extra badcases per 1000 take the paired bootstrap of
the per-item badcase flags (seed 000 §3.3).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from edgepick.evaluate.intervals import (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, bootstrap_mean,
                                         per_item_rate, wilson)
from edgepick.evaluate.scorers import ItemScore, get_scorer
from edgepick.records.evaluation import Badcase, GroupGap, ItemOutcome, Rate, Unacceptable

__all__ = ["BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "paired_bootstrap", "group_gap", "gaps_by",
           "unacceptable_summary", "badcase_list"]


def paired_bootstrap(ref: list[float], cand: list[float], resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = BOOTSTRAP_SEED) -> tuple[list[float], list[float] | None]:
    """95% percentile intervals of mean(ref) − mean(cand), and of that over mean(ref)."""
    r, c = np.asarray(ref, dtype=float), np.asarray(cand, dtype=float)
    if r.size == 0:
        return [0.0, 0.0], None
    idx = np.random.default_rng(seed).integers(0, r.size, size=(resamples, r.size))
    rm, cm = r[idx].mean(axis=1), c[idx].mean(axis=1)
    diff = rm - cm
    ci = [float(np.percentile(diff, 2.5)), float(np.percentile(diff, 97.5))]
    if np.all(rm > 0):
        rel = diff / rm
        return ci, [float(np.percentile(rel, 2.5)), float(np.percentile(rel, 97.5))]
    return ci, None


def item_values(outcomes: list[ItemOutcome], what: str) -> list[float]:
    """Per item: the flag (one output), or the share of its samples (k samples)."""
    out = []
    for o in outcomes:
        if o.samples and what in o.shares:
            out.append(o.shares[what])
        elif what == "unacceptable":
            out.append(float(bool(o.unacceptable)))
        else:
            out.append(float(bool(getattr(o, what))))
    return out


def item_rate(outcomes: list[ItemOutcome], what: str) -> Rate:
    """Rate.of the flags; with k samples per item, the per-item rate and its interval
    (intervals.per_item_rate), never k×n samples as if they were independent."""
    k = max((len(o.samples) for o in outcomes), default=0)
    if k <= 1:
        return Rate.of([v >= 0.5 for v in item_values(outcomes, what)])
    p, lo, hi = per_item_rate(item_values(outcomes, what), k)
    return Rate(count=round(p * len(outcomes)), n=len(outcomes), value=p, low=lo, high=hi)


def _strict(outcomes: list[ItemOutcome]) -> Rate | None:
    has = [o for o in outcomes if o.strict_format is not None]
    return item_rate(has, "strict_format") if has else None


def group_gap(items: list, cand: list[ItemOutcome], ref: list[ItemOutcome],
              cand_scores: list[ItemScore], ref_scores: list[ItemScore],
              task: str | None, resamples: int, seed: int) -> GroupGap:
    """Items, outcomes and scores are aligned lists over the same items."""
    cs, rs = [o.score for o in cand], [o.score for o in ref]
    score, ref_score = float(np.mean(cs)), float(np.mean(rs))
    gap = ref_score - score
    ci, ci_rel = paired_bootstrap(rs, cs, resamples, seed)
    metrics: dict[str, float] = {}
    ref_metrics: dict[str, float] = {}
    if task is not None:
        scorer = get_scorer(task)
        metrics = scorer.aggregate(items, cand_scores)
        ref_metrics = scorer.aggregate(items, ref_scores)
    cb, rb = item_values(cand, "badcase"), item_values(ref, "badcase")
    bad, ref_bad = float(np.mean(cb)), float(np.mean(rb))
    # mean(candidate flags) − mean(reference flags): extra badcases, same items resampled.
    (lo, hi), _ = paired_bootstrap(cb, rb, resamples, seed)
    return GroupGap(
        n=len(cand), score=score, ref_score=ref_score, gap_abs=gap,
        gap_rel=gap / ref_score if ref_score > 0 else None, ci95=ci, ci95_rel=ci_rel,
        score_ci95=list(bootstrap_mean(cs, resamples, seed)),
        ref_score_ci95=list(bootstrap_mean(rs, resamples, seed)),
        badcase_rate=bad, ref_badcase_rate=ref_bad, badcases_per_1000=(bad - ref_bad) * 1000,
        badcases_per_1000_ci95=[lo * 1000, hi * 1000],
        badcases=item_rate(cand, "badcase"), ref_badcases=item_rate(ref, "badcase"),
        unacceptable=item_rate(cand, "unacceptable"),
        ref_unacceptable=item_rate(ref, "unacceptable"),
        strict_format=_strict(cand), ref_strict_format=_strict(ref),
        format_ok_rate=float(np.mean(item_values(cand, "format_ok"))),
        ref_format_ok_rate=float(np.mean(item_values(ref, "format_ok"))),
        unacceptable_rate=float(np.mean(item_values(cand, "unacceptable"))),
        ref_unacceptable_rate=float(np.mean(item_values(ref, "unacceptable"))),
        metrics=metrics, ref_metrics=ref_metrics)


def gaps_by(key, items: list, cand: list[ItemOutcome], ref: list[ItemOutcome],
            cand_scores: list[ItemScore], ref_scores: list[ItemScore], per_task: bool,
            resamples: int, seed: int) -> dict[str, GroupGap]:
    groups: dict[str, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        groups[key(it)].append(i)
    out = {}
    order = {"easy": 0, "medium": 1, "hard": 2}  # difficulties read best in their own order
    for name in sorted(groups, key=lambda g: (order.get(g, 3), g)):
        ix = groups[name]
        out[name] = group_gap([items[i] for i in ix], [cand[i] for i in ix], [ref[i] for i in ix],
                              [cand_scores[i] for i in ix], [ref_scores[i] for i in ix],
                              name if per_task else None, resamples, seed)
    return out


def unacceptable_summary(outcomes: list[ItemOutcome]) -> Unacceptable:
    """Reasons count outputs (each sample once); the rate and its interval count items."""
    reasons = Counter(r for o in outcomes for x in (o.samples or [o]) for r in x.unacceptable)
    if any(o.samples for o in outcomes):
        r = item_rate(outcomes, "unacceptable")
        return Unacceptable(n=r.n, count=r.count, rate=r.value,
                            reasons=dict(sorted(reasons.items())), low=r.low, high=r.high)
    count = sum(1 for o in outcomes if o.unacceptable)
    lo, hi = wilson(count, len(outcomes))
    return Unacceptable(n=len(outcomes), count=count, rate=count / max(1, len(outcomes)),
                        reasons=dict(sorted(reasons.items())), low=lo, high=hi)


def badcase_list(items: list, cand: list[ItemOutcome], ref: list[ItemOutcome]) -> list[Badcase]:
    out = []
    for it, c, r in zip(items, cand, ref):
        if c.badcase:
            why = [c.details.get("why") or ""] + c.unacceptable
            out.append(Badcase(item_id=it.id, task=it.task, difficulty=it.difficulty,
                               critical=it.critical, expected=it.reference, got=c.output,
                               reference_output=r.output,
                               why="; ".join(w for w in why if w) or "wrong answer"))
    return out
