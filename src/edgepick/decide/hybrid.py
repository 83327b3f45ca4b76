"""A hybrid edge/cloud plan when no single candidate clears every task (seed 000 §6.4, seed 001
§6.3: route by task type): the edge candidate for the task types it clears, the reference (the
cloud side of the evaluation) for the rest, with expected badcases per 1000 and the cloud share
under the scenario's task mix.

A task type goes to the edge when none of its quality gates fails and every observed value is
on the good side of its limit; an undetermined task on the edge is named in the explanation.
"""

from __future__ import annotations

import math

from edgepick.decide.gates import task_specs
from edgepick.decide.scenarios import Scenario
from edgepick.evaluate.intervals import Z95
from edgepick.records.decision import CandidateSummary, Figure, HybridPlan, RankedCandidate
from edgepick.records.deploy import Gate, TaskRoute


def routable() -> set[str]:
    """Violations a hybrid can route around: the task-scoped gates. Anything else (speed,
    memory, a failed run) rules the candidate out of the edge altogether."""
    return {g.name for g in task_specs()}


def task_mix(s: CandidateSummary, sc: Scenario) -> tuple[dict[str, float], str]:
    """Share of requests per measured task type: the scenario's mix, else the eval set's."""
    tasks = [t for t, q in s.tasks.items() if q.n]
    if sc.task_mix:
        raw = {t: max(0.0, sc.task_mix.get(t, 0.0)) for t in tasks}
        source = "scenario task_mix"
    else:
        raw = {t: float(s.tasks[t].n or 0) for t in tasks}
        source = "eval set proportions"
    total = sum(raw.values())
    if total <= 0:
        return {}, source
    return {t: v / total for t, v in raw.items()}, source


def _good_side(g: Gate) -> bool:
    if g.value is None or g.limit is None:
        return False
    return g.value <= g.limit if g.direction == "max" else g.value >= g.limit


def edge_ok(gates: list[Gate]) -> bool:
    return all(g.verdict in ("pass", "undetermined") and _good_side(g) for g in gates)


def _route(task: str, route: str, fig: Figure | None, share: float) -> TaskRoute:
    if fig is None:
        return TaskRoute(task=task, route=route, share=share)
    return TaskRoute(task=task, route=route, badcases_per_1000=fig.value * 1000,
                     low=None if fig.low is None else fig.low * 1000,
                     high=None if fig.high is None else fig.high * 1000, share=share)


def plan_for(s: CandidateSummary, ranked: RankedCandidate, sc: Scenario) -> HybridPlan | None:
    """The split for one candidate, or None when it has nothing to give the edge, nothing to
    give the cloud, or fails a constraint no routing avoids."""
    if any(v.constraint not in routable() for v in ranked.violations):
        return None
    mix, source = task_mix(s, sc)
    routes = []
    for task in sorted(mix):
        q = s.tasks[task]
        edge = edge_ok(ranked.task_gates.get(task, []))
        routes.append(_route(task, "edge" if edge else "cloud",
                             q.badcases if edge else q.ref_badcases, mix[task]))
    kinds = {r.route for r in routes}
    if kinds != {"edge", "cloud"}:
        return None
    value = sum((r.share or 0) * (r.badcases_per_1000 or 0) for r in routes)
    spread = [(r.share or 0) * (r.high - r.low) / (2 * Z95) for r in routes
              if r.low is not None and r.high is not None]
    se = math.sqrt(sum(x * x for x in spread)) if len(spread) == len(routes) else None
    return HybridPlan(
        candidate=s.candidate, routes=routes,
        cloud_share=sum(r.share or 0 for r in routes if r.route == "cloud"),
        badcases_per_1000=value, low=None if se is None else max(0.0, value - Z95 * se),
        high=None if se is None else min(1000.0, value + Z95 * se), mix_source=source)


def best_hybrid(summaries: list[CandidateSummary], ranking: list[RankedCandidate],
                sc: Scenario) -> HybridPlan | None:
    """The plan that keeps the most traffic on the edge; fewer expected badcases on a tie."""
    by_name = {r.candidate: r for r in ranking}
    plans = [p for s in summaries if (p := plan_for(s, by_name[s.candidate], sc)) is not None]
    return min(plans, key=lambda p: (p.cloud_share, p.badcases_per_1000, p.candidate), default=None)
