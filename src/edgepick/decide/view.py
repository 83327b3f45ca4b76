"""The decision's figures for `decide --json`: every gate with value, low, high, limit and
verdict; badcases per 1000 per task with their intervals; the status and the hybrid route."""

from __future__ import annotations

from edgepick.records.decision import CandidateSummary, Decision


def _per_1000(fig) -> dict | None:
    if fig is None:
        return None
    return {"value": fig.value * 1000, "low": None if fig.low is None else fig.low * 1000,
            "high": None if fig.high is None else fig.high * 1000, "count": fig.count, "n": fig.n}


def badcases_view(s: CandidateSummary) -> dict[str, dict]:
    """task -> the candidate's and the reference's badcases per 1000 and the extra ones."""
    out = {}
    for task, q in sorted(s.tasks.items()):
        own = _per_1000(q.badcases) or {"value": None, "low": None, "high": None}
        ci = q.badcases_per_1000_ci95 or [None, None]
        out[task] = dict(own, reference=_per_1000(q.ref_badcases),
                         extra={"value": q.badcases_per_1000, "low": ci[0], "high": ci[1]})
    return out


def enrich(data: dict, d: Decision, summaries: list[CandidateSummary]) -> dict:
    """Add the gates, status and badcases to `decide --json`'s dict (its ranking rows too)."""
    extras = decision_extras(d, summaries)
    data.update(extras)
    for row in data.get("ranking") or []:
        row.update(extras["per_candidate"].get(row.get("candidate"), {}))
    return data


def decision_extras(d: Decision, summaries: list[CandidateSummary]) -> dict:
    """Per-candidate gates, task gates and badcases; the recommendation's gates and status."""
    by_name = {s.candidate: s for s in summaries}
    ranking = {r.candidate: r for r in d.ranking}
    rec = ranking.get(d.recommendation) if d.recommendation else None
    return {
        "status": d.status,
        "gates": [g.model_dump(mode="json") for g in rec.gates] if rec else [],
        "hybrid": d.hybrid.model_dump(mode="json") if d.hybrid else None,
        "per_candidate": {
            name: {"status": r.status,
                   "gates": [g.model_dump(mode="json") for g in r.gates],
                   "task_gates": {t: [g.model_dump(mode="json") for g in gs]
                                  for t, gs in r.task_gates.items()},
                   "badcases_per_1000": badcases_view(by_name[name]) if name in by_name else {}}
            for name, r in ranking.items()},
    }
