"""A hybrid edge/cloud plan when no single candidate clears every task (seed 000 §6.3-6.4, seed
001 §6.3: route by task type), and only when it is a solution.

Per task type: the edge when none of its task gates fails and every observed value is on the
good side of its limit (an undetermined task on the edge is named in the explanation).
Otherwise the cloud (the reference the eval compared with), but only when
- the scenario lets the task leave the device (`network: online`, not in `edge_only_tasks`);
- the cloud passes that task's gates itself, judged by the same rule on its own figures;
- the cloud lowers the task's badcases: the paired per-item comparison's 95% interval of the
  edge's extra badcases lies wholly above zero.
A task neither side serves is *unserved*: the plan is no plan, and the decision is none, naming
the task and what fails on both sides. `max_cloud_share` caps the cloud's share of requests.
"""

from __future__ import annotations

import math

from edgepick.decide.gates import limits, make_gate, task_figure, task_specs
from edgepick.decide.scenarios import Scenario
from edgepick.evaluate.intervals import Z95
from edgepick.records.decision import (CandidateSummary, Figure, HybridPlan, RankedCandidate,
                                       TaskQuality, UnservedTask)
from edgepick.records.deploy import Gate, TaskRoute


def routable() -> set[str]:
    """Violations a hybrid can route around: the task-scoped gates. Anything else (speed,
    memory, a failed run) rules the candidate out of the edge altogether."""
    return {g.name for g in task_specs()}


def task_mix(s: CandidateSummary, sc: Scenario) -> tuple[dict[str, float], str]:
    """Share of requests per measured task type: the scenario's mix, else the eval set's. The
    eval set's is the items planned per task (`planned_items`, from sequential evaluation,
    where a stopped task has fewer items evaluated than the set holds), else the items
    evaluated."""
    tasks = [t for t, q in s.tasks.items() if q.n]
    if sc.task_mix:
        raw = {t: max(0.0, sc.task_mix.get(t, 0.0)) for t in tasks}
        source = "scenario task_mix"
    else:
        raw = {t: float(s.tasks[t].metrics.get("planned_items") or s.tasks[t].n or 0)
               for t in tasks}
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


def failing(gates: list[Gate]) -> list[Gate]:
    """The gates that keep a side from serving a task (failed, unmeasured or on the bad side)."""
    return [g for g in gates if not (g.verdict in ("pass", "undetermined") and _good_side(g))]


def cloud_quality(q: TaskQuality) -> TaskQuality:
    """The reference's own figures on the task's items, shaped as a task's quality."""
    return TaskQuality(n=q.n, score=q.ref_score, score_ci95=q.ref_score_ci95,
                       unacceptable=q.ref_unacceptable, format_ok=q.ref_format_ok,
                       strict_format=q.ref_strict_format, badcases=q.ref_badcases,
                       metrics=q.ref_metrics)


def cloud_gates(q: TaskQuality, sc: Scenario) -> list[Gate]:
    """The task gates on the cloud's side; extra badcases are against the cloud itself, so
    that gate has nothing to say about it."""
    lim, cq = limits(sc, None), cloud_quality(q)
    out = []
    for g in task_specs():
        if lim.get(g.name) is None or g.metric == "extra_badcases_per_1000":
            continue
        fig = task_figure(g, cq)
        if fig is None and g.task_optional:
            continue
        out.append(make_gate(g.metric, fig, lim[g.name], g.direction))
    return out


def cloud_lowers_badcases(q: TaskQuality) -> bool:
    """Paired per item: the edge's extra badcases over the cloud, interval wholly above 0."""
    ci = q.badcases_per_1000_ci95
    return bool(ci) and ci[0] > 0


def task_route(task: str, route: str, fig: Figure | None, share: float,
           latency: float | None) -> TaskRoute:
    if fig is None:
        return TaskRoute(task=task, route=route, share=share, latency_ms=latency)
    return TaskRoute(task=task, route=route, badcases_per_1000=fig.value * 1000,
                     low=None if fig.low is None else fig.low * 1000,
                     high=None if fig.high is None else fig.high * 1000, share=share,
                     latency_ms=latency)


def output_tokens(q: TaskQuality | None, sc: Scenario, ref: bool = False) -> float | None:
    """Tokens an answer runs to: the scenario's P50, else the side's measured P50."""
    if sc.output_tokens is not None:
        return float(sc.output_tokens.p50)
    if q is None:
        return None
    return (q.ref_metrics if ref else q.metrics).get("output_tokens_p50")


def edge_latency(s: CandidateSummary, q: TaskQuality | None, sc: Scenario) -> float | None:
    """TTFT P50 plus the answer's tokens at the measured decode speed (end to end, ms)."""
    out = output_tokens(q, sc)
    if s.ttft_p50_ms is None or not s.decode_tps or out is None:
        return None
    return s.ttft_p50_ms + out / s.decode_tps * 1000


def _cost(routes: list[TaskRoute], s: CandidateSummary, sc: Scenario) -> float | None:
    """The cloud's price for 1000 requests under the mix: prompt plus answer tokens each."""
    price = sc.cloud.price_per_1k_tokens
    if price is None:
        return None
    total = 0.0
    for r in routes:
        if r.route != "cloud":
            continue
        prompt = sc.context_tokens.p50 if sc.context_tokens else 0
        out = output_tokens(s.tasks.get(r.task), sc, ref=True)
        if out is None and not prompt:
            return None
        total += (r.share or 0) * 1000 * (prompt + (out or 0)) / 1000 * price
    return total


def plan_for(s: CandidateSummary, ranked: RankedCandidate, sc: Scenario) -> HybridPlan | None:
    """The split for one candidate (with the tasks nobody serves, if any), or None when it
    fails a constraint no routing avoids or clears every task on the edge."""
    if any(v.constraint not in routable() for v in ranked.violations):
        return None
    mix, source = task_mix(s, sc)
    routes, unserved = [], []
    for task in sorted(mix):
        q = s.tasks[task]
        edge_gates = ranked.task_gates.get(task, [])
        if edge_ok(edge_gates):
            routes.append(task_route(task, "edge", q.badcases, mix[task], edge_latency(s, q, sc)))
            continue
        blocked = sc.cloud_allowed(task)
        cg = [] if blocked else cloud_gates(q, sc)
        better = not blocked and cloud_lowers_badcases(q)
        if blocked or not edge_ok(cg) or not better:
            ci = q.badcases_per_1000_ci95
            unserved.append(UnservedTask(
                task=task, share=mix[task], edge_fails=failing(edge_gates),
                cloud_fails=failing(cg), cloud_blocked=blocked,
                cloud_no_better=not blocked and edge_ok(cg) and not better,
                extra=None if q.badcases_per_1000 is None or not ci
                else [q.badcases_per_1000, ci[0], ci[1]]))
            continue
        routes.append(task_route(task, "cloud", q.ref_badcases, mix[task],
                                 sc.cloud.latency_budget_ms))
    if not unserved and all(r.route == "edge" for r in routes):
        return None
    share = sum(r.share or 0 for r in routes if r.route == "cloud")
    if sc.max_cloud_share is not None and share > sc.max_cloud_share + 1e-9:
        # the cloud tasks are what the cap forbids: each is named, the cheapest first
        for r in sorted((r for r in routes if r.route == "cloud"), key=lambda r: r.share or 0):
            unserved.append(UnservedTask(task=r.task, share=r.share,
                                         edge_fails=failing(ranked.task_gates.get(r.task, [])),
                                         cloud_blocked="max_cloud_share"))
    value, low, high = mix_badcases(routes)
    return HybridPlan(
        candidate=s.candidate, routes=routes, cloud_share=share, badcases_per_1000=value,
        low=low, high=high, mix_source=source, cost_per_1000=_cost(routes, s, sc),
        unserved=unserved)


def mix_badcases(routes: list[TaskRoute]) -> tuple[float, float | None, float | None]:
    """Badcases per 1000 requests under the mix, with a 95% interval from the tasks' own
    intervals (independent tasks, each interval read as ±1.96 standard errors)."""
    value = sum((r.share or 0) * (r.badcases_per_1000 or 0) for r in routes)
    spread = [(r.share or 0) * (r.high - r.low) / (2 * Z95) for r in routes
              if r.low is not None and r.high is not None]
    if len(spread) != len(routes):
        return value, None, None
    se = math.sqrt(sum(x * x for x in spread))
    return value, max(0.0, value - Z95 * se), min(1000.0, value + Z95 * se)


def is_solution(p: HybridPlan) -> bool:
    """Every task served, and some on each side."""
    return not p.unserved and {r.route for r in p.routes} == {"edge", "cloud"}


def best_hybrid(summaries: list[CandidateSummary], ranking: list[RankedCandidate],
                sc: Scenario) -> tuple[HybridPlan | None, HybridPlan | None]:
    """(the plan that keeps the most traffic on the edge, fewer expected badcases on a tie;
    the nearest attempt when no plan is a solution, to say what nobody serves)."""
    by_name = {r.candidate: r for r in ranking}
    plans = [p for s in summaries if (p := plan_for(s, by_name[s.candidate], sc)) is not None]
    good = [p for p in plans if is_solution(p)]
    best = min(good, key=lambda p: (p.cloud_share, p.badcases_per_1000, p.candidate),
               default=None)
    near = None if best else min(
        plans, key=lambda p: (sum(u.share or 0 for u in p.unserved), p.cloud_share, p.candidate),
        default=None)
    return best, near
