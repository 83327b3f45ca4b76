"""decide(summaries, scenario, budget) -> Decision: a pure function over stored measurements.

Status (docs/decide.md): proven when every hard constraint passes with its whole 95% interval;
provisional when none fails but some are undetermined or unmeasured (each named); hybrid when no
candidate clears every task but one clears some and the cloud serves the rest, passing their
gates itself and lowering their badcases (decide/hybrid.py); team when no candidate clears every
task but several edge models do within the memory budget, each on the tasks it clears
(decide/team.py; preferred to a hybrid, since every request stays on the device); none
otherwise, with the nearest candidate, the task types nobody serves and what would change it.
"""

from __future__ import annotations

from edgepick.decide.closest import nearness
from edgepick.decide.explain import explain
from edgepick.decide.gates import task_gates
from edgepick.decide.hybrid import best_hybrid
from edgepick.decide.pareto import pareto_front
from edgepick.decide.scenarios import Scenario
from edgepick.decide.scoring import check_constraints, score
from edgepick.decide.team import best_team
from edgepick.decide.texts import reasons_text
from edgepick.records.decision import CandidateSummary, Decision, RankedCandidate

NORMALISATION = ("each metric divided by the best surviving candidate's value (higher is better) "
                 "or the best value divided by it (lower is better); best = 1.0; a metric measured "
                 "for nobody drops out, one missing for some scores 0 for them; layer = weighted "
                 "mean of its metrics; score = weighted mean of the layers")


def status_of(violations: list, unchecked: list[str], gates: list) -> str:
    if violations:
        return "eliminated"
    if unchecked or any(g.verdict != "pass" for g in gates):
        return "provisional"
    return "proven"


def task_fails(r: RankedCandidate) -> list[str]:
    """Task types whose own quality gates fail on the whole interval."""
    return [t for t, gs in r.task_gates.items() if any(g.verdict == "fail" for g in gs)]


def decide(summaries: list[CandidateSummary], scenario: Scenario,
           budget: int | None = None) -> Decision:
    checks = {s.candidate: check_constraints(s, scenario, budget) for s in summaries}
    survivors = [s for s in summaries if not checks[s.candidate][0]]
    scores = score(survivors, scenario)
    front = set(pareto_front(survivors, scenario))
    ranking: list[RankedCandidate] = []
    for s in summaries:
        violations, unchecked, gates = checks[s.candidate]
        sc = scores.get(s.candidate)
        r = RankedCandidate(
            candidate=s.candidate, score=sc["score"] if sc else None, eliminated=bool(violations),
            violations=violations, unchecked=unchecked, missing=sc["notes"] if sc else [],
            layer_scores=sc["layers"] if sc else {}, metric_scores=sc["metrics"] if sc else {},
            pareto=s.candidate in front, gates=gates, task_gates=task_gates(s, scenario),
            status=status_of(violations, unchecked, gates))
        r.reasons = reasons_text(r, "en")
        ranking.append(r)
    # Proven before provisional, then by score; eliminated after them, nearest to passing first.
    alive = sorted((r for r in ranking if not r.eliminated),
                   key=lambda r: (r.status != "proven", -(r.score or 0.0), r.candidate))
    ranking = alive + sorted((r for r in ranking if r.eliminated), key=nearness)
    by_name = {s.candidate: s for s in summaries}
    # A survivor can still fail one task type on its whole interval (a few tool calls among many
    # chat items leave the pooled rate undetermined): no single candidate clears every task then.
    whole = [r for r in alive if not task_fails(r)]
    hybrid, near = (None, None) if whole else best_hybrid(
        [by_name[r.candidate] for r in alive] if alive else summaries,
        alive or ranking, scenario)
    # several edge models, each on the tasks it clears, keep every request on the device: a team
    # is preferred to a hybrid as the hybrid prefers the plan with the most traffic on the edge
    team, team_refused = (None, None) if whole else best_team(summaries, ranking, scenario,
                                                              budget)
    if team is not None:
        team.hybrid, hybrid = hybrid, None
    if whole:
        top = whole[0]
        recommendation, status = top.candidate, top.status
    elif team:
        recommendation, status = team.members[0].candidate, "team"
    elif hybrid:
        recommendation, status = hybrid.candidate, "hybrid"
    elif alive and near is None:  # no task gate set, or nothing a route could change
        top = alive[0]
        recommendation, status = top.candidate, top.status
    else:  # some task type has no side that serves it (or nothing survives at all)
        recommendation, status = None, "none"
    decision = Decision(
        scenario=scenario.name, budget_bytes=budget, ranking=ranking,
        recommendation=recommendation, status=status, hybrid=hybrid, team=team,
        team_refused=team_refused,
        runner_up=next((r.candidate for r in alive if r.candidate != recommendation), None),
        closest=None if recommendation or hybrid or team or not ranking
        else (near.candidate if near else ranking[0].candidate),
        pareto=[r.candidate for r in ranking if r.pareto], normalisation=NORMALISATION,
        unserved=near.unserved if near and recommendation is None else [])
    decision.explanation = explain(decision, by_name, scenario, "en")
    return decision
