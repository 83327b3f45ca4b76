"""A team of edge models when no single candidate clears every task (seed 001
§6.3: a light model for simple queries, a medium one for routine work, preloaded or swapped).

Mirrors the hybrid plan (decide/hybrid.py) with several edge models instead of edge + cloud:
- a member may fail only task-scoped gates (speed, memory, a failed run rule it out, as they rule
  a candidate out of a hybrid's edge side);
- each task goes to a member that passes that task's gates by the hybrid's edge rule
  (`edge_ok`), the one with the fewest badcases on it;
- the smallest team that serves every task wins, then the fewest expected badcases under the
  task mix, then the fewest swaps.

Memory (records/team.py): members are pinned in order of their share of requests while the
pinned needs plus the largest on-demand one stay within the limit (the scenario's memory limit,
else the device budget); the rest load on demand into one free slot.

Swap cost, stated as a model: requests are independent draws from the task mix; the on-demand
slot holds the last on-demand model used (no idle unloads); a request to an on-demand model m
loads it unless the previous on-demand request went to m too. With p_m its share and q_m its
share among on-demand requests, loads per request = Σ p_m (1 − q_m), and the expected load time
per request = Σ p_m (1 − q_m) × m's measured load time (unmeasured when one is missing).
Grouping queued requests by model (serve) only lowers this.
"""

from __future__ import annotations

from itertools import combinations

from edgepick.decide.gates import limits, measured_memory
from edgepick.decide.hybrid import (edge_latency, edge_ok, mix_badcases, routable, task_mix,
                                    task_route)
from edgepick.decide.scenarios import Scenario
from edgepick.records.decision import CandidateSummary, RankedCandidate, TeamMember, TeamPlan
from edgepick.records.team import EdgeModel, memory_plan

MAX_TEAM = 4  # members at most: seed 001 §6.3 names three sizes; more is a fleet, not a device


def memory_limit(sc: Scenario, budget: int | None) -> int | None:
    """The scenario's memory limit, else the device budget (None: nothing to check against)."""
    lim = limits(sc, budget).get("peak_memory_max")
    return int(lim) if lim is not None else budget


def swap_figures(members: list[TeamMember]) -> tuple[float, float | None]:
    """(expected model loads per request, expected load time per request in ms or None)."""
    od = [m for m in members if not m.pin]
    total = sum(m.share for m in od)
    if len(od) < 2 or total <= 0:
        return 0.0, 0.0
    loads = {m.candidate: m.share * (1 - m.share / total) for m in od}
    ms = None if any(m.load_ms is None for m in od if loads[m.candidate] > 0) else \
        sum(loads[m.candidate] * (m.load_ms or 0.0) for m in od)
    return sum(loads.values()), ms


def _pins(members: list[TeamMember], limit: int | None) -> None:
    """Pin by share of requests while the plan stays within the limit."""
    for m in sorted(members, key=lambda m: -m.share):
        m.pin = True
        if memory_plan(_stubs(members), limit).fits is not True:
            m.pin = False


def _stubs(members: list[TeamMember]) -> list[EdgeModel]:
    return [EdgeModel(name=m.candidate, path="", sha256="", pin=m.pin, need_bytes=m.need_bytes)
            for m in members]


def _plan(combo: tuple[RankedCandidate, ...], by_name: dict[str, CandidateSummary],
          serves: dict[str, set[str]], mix: dict[str, float], source: str, sc: Scenario,
          limit: int | None) -> TeamPlan | None:
    """The team's assignment and figures; None when a member would get no task (a smaller
    team serves the same)."""
    def badness(r: RankedCandidate, task: str) -> tuple:
        s = by_name[r.candidate]
        b = s.tasks[task].badcases
        return (float("inf") if b is None else b.value, measured_memory(s) or 0, r.candidate)

    assigned = {task: min((r for r in combo if task in serves[r.candidate]),
                          key=lambda r: badness(r, task)).candidate for task in sorted(mix)}
    members = []
    for r in combo:
        tasks = [t for t, c in assigned.items() if c == r.candidate]
        if not tasks:
            return None
        s = by_name[r.candidate]
        members.append(TeamMember(candidate=r.candidate, tasks=tasks,
                                  share=sum(mix[t] for t in tasks), need_bytes=measured_memory(s),
                                  load_ms=s.load_ms))
    members.sort(key=lambda m: (-m.share, m.candidate))
    _pins(members, limit)
    fit = memory_plan(_stubs(members), limit)
    routes = [task_route(t, c, by_name[c].tasks[t].badcases, mix[t],
                         edge_latency(by_name[c], by_name[c].tasks[t], sc))
              for t, c in assigned.items()]
    value, low, high = mix_badcases(routes)
    swaps, ms = swap_figures(members)
    return TeamPlan(members=members, routes=routes, badcases_per_1000=value, low=low, high=high,
                    mix_source=source, memory_bytes=None if fit.unmeasured else fit.total,
                    budget_bytes=limit, fits=fit.fits is True, swaps_per_1000=swaps * 1000,
                    swap_ms_per_request=ms)


def best_team(summaries: list[CandidateSummary], ranking: list[RankedCandidate], sc: Scenario,
              budget: int | None) -> tuple[TeamPlan | None, TeamPlan | None]:
    """(the team to propose; else the smallest team that serves every task but does not fit,
    to say why none was proposed)."""
    by_name = {s.candidate: s for s in summaries}
    pool = [r for r in ranking if r.candidate in by_name
            and all(v.constraint in routable() for v in r.violations)]
    if len(pool) < 2:
        return None, None
    # the mix over every task measured: the candidate evaluated on the most task types
    widest = max((by_name[r.candidate] for r in pool),
                 key=lambda s: sum(1 for q in s.tasks.values() if q.n))
    mix, source = task_mix(widest, sc)
    serves = {r.candidate: {t for t in mix if t in by_name[r.candidate].tasks
                            and edge_ok(r.task_gates.get(t, []))} for r in pool}
    limit, refused = memory_limit(sc, budget), None
    for size in range(2, min(MAX_TEAM, len(pool)) + 1):
        teams = [p for combo in combinations(pool, size)
                 if set().union(*(serves[r.candidate] for r in combo)) == set(mix)
                 and (p := _plan(combo, by_name, serves, mix, source, sc, limit)) is not None]
        fitting = [p for p in teams if p.fits]
        if fitting:
            return min(fitting, key=lambda p: (p.badcases_per_1000, p.swaps_per_1000,
                                               [m.candidate for m in p.members])), None
        if teams and refused is None:
            refused = min(teams, key=lambda p: (p.memory_bytes is None, p.memory_bytes or 0,
                                                p.badcases_per_1000))
    return None, refused
