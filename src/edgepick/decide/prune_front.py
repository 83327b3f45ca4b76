"""Pruned and quantized builds on one size-against-KLD front (seed 003 §3.3: pruning is one of
three ways onto a device, and without healing its quality falls fast), and the sentence that
says whether pruning bought anything quantization did not.

A build is on the front when no other measured build is both as small or smaller and as close
or closer to the unpruned source, one of them strictly. The KLD is each build's against its
fidelity reference: for a plan's quantize entry, the unpruned source itself.
"""

from __future__ import annotations

import os

from edgepick.records.decision import CandidateSummary
from edgepick.records.prune import FrontPoint, PruneFront
from edgepick.strings import texts

LANGS = ("en", "zh")


def _size(s: CandidateSummary) -> int | None:
    if "://" not in s.model and os.path.isfile(s.model):
        return os.path.getsize(s.model)
    return s.weights_bytes


def _dominates(o: FrontPoint, p: FrontPoint) -> bool:
    return (o.size_bytes <= p.size_bytes and o.kld_mean <= p.kld_mean
            and (o.size_bytes < p.size_bytes or o.kld_mean < p.kld_mean))


def prune_front(summaries: list[CandidateSummary]) -> PruneFront | None:
    """The front over every build with a size and a KLD, None when no candidate is pruned."""
    if not any(s.pruned for s in summaries):
        return None
    points = [FrontPoint(candidate=s.candidate, quant=s.quant, size_bytes=_size(s),
                         kld_mean=s.kld_mean, pruned=s.pruned)
              for s in summaries if s.pruned or (s.kld_mean is not None and _size(s))]
    measured = [p for p in points if p.kld_mean is not None and p.size_bytes]
    for p in measured:
        better = [o for o in measured if o is not p and _dominates(o, p)]
        p.on_front = not better
        if better:  # the closest of those that beat it: the one to take instead
            p.dominated_by = min(better, key=lambda o: (o.kld_mean, o.size_bytes)).candidate
    points.sort(key=lambda p: (p.size_bytes is None, p.size_bytes or 0))
    pruned = [p for p in measured if p.pruned]
    verdict = "unmeasured" if not pruned else \
        "on_front" if any(p.on_front for p in pruned) else "dominated"
    return PruneFront(points=points, verdict=verdict,
                      words={lg: _words(verdict, measured, lg) for lg in LANGS})


def _words(verdict: str, measured: list[FrontPoint], lang: str) -> str:
    t = texts("prune_report", lang)
    pruned = [p for p in measured if p.pruned]
    if verdict == "unmeasured":
        return t["verdict_unmeasured"]
    if verdict == "on_front":
        kept = [p for p in pruned if p.on_front]
        names = ", ".join(f"{p.candidate} ({_point(p)})" for p in kept)
        return t["verdict_on_front"].format(names=names, n=len(measured))
    best = min(pruned, key=lambda p: (p.kld_mean, p.size_bytes))
    by = next(p for p in measured if p.candidate == best.dominated_by)
    return t["verdict_dominated"].format(best=best.candidate, best_point=_point(best),
                                         other=by.candidate, other_point=_point(by))


def _point(p: FrontPoint) -> str:
    return f"KLD {p.kld_mean:.3g}, {p.size_bytes / 2**20:.1f} MiB"
