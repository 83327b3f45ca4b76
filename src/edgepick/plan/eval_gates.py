"""What the plan's eval stage takes from the scenario and the gate table (gate_spec.py):
the quality gates the sequential looks stop on, the deployment's sampling, and the candidates
that a measured speed or memory failure already rules out, so they are not evaluated at all."""

from __future__ import annotations

from edgepick.decide.gates import candidate_gates, limits, ruled_out_before_eval
from edgepick.decide.selection import select
from edgepick.decide.summary import build_summaries
from edgepick.evaluate.seq_gates import EvalGate
from edgepick.gate_spec import gate_of, gate_table

# A hybrid routes around task-scope gates only (decide/hybrid.py); a failure of any other
# gate rules the candidate out of the edge whatever its quality.


def eval_gates(scenario) -> list:
    """One EvalGate per quality limit the scenario sets, in the gate table's order. A quality
    gate under task weights is a weighted mix of per-task intervals the looks do not model: it
    is left out, and the candidate's cells stay open while it could matter (never stop early
    on it)."""
    lim = limits(scenario, None)
    out = []
    for g in gate_table().values():
        if not g.in_looks or lim.get(g.name) is None:
            continue
        weighted = g.metric == "quality" and bool(scenario.task_weights)
        out.append(EvalGate(metric=g.metric, direction=g.direction, limit=lim[g.name],
                            scopes=tuple(g.scope), routable="task" in g.scope,
                            never_settles=weighted))
    return out


def sampling_of(scenario) -> tuple[dict | None, int]:
    """(the sampling settings, samples per item); (None, 1) = greedy, as before."""
    s = getattr(scenario, "sampling", None)
    if s is None:
        return None, 1
    knobs = {k: v for k, v in s.model_dump().items() if k != "samples" and v is not None}
    if not knobs and s.samples == 1:
        return None, 1
    return knobs or {"temperature": 0.0}, s.samples


def unroutable_failures(st, active, scenario) -> dict[str, str]:
    """Candidate name -> the gate outside evaluation (memory, speed, decay) it fails on this
    run's measurements (decide/gates.ruled_out_before_eval, the rule the decision states): settled
    fails only; an undetermined one (a speed gate failing on a contended measurement among
    them) or an unmeasured one keeps it in."""
    run_id = getattr(st.store, "run_id", None)
    summaries = build_summaries(st.store, models=[c.ref.locator for c in active],
                                names={c.ref.locator: c.name for c in active},
                                selection=select(st.store, [run_id] if run_id else None))
    out = {}
    for s in summaries:  # by name: two candidates of one file are one summary, not a shifted zip
        gate = ruled_out_before_eval(candidate_gates(s, scenario, st.device.model_budget_bytes))
        if gate is not None:
            out[s.candidate] = gate_of(gate.metric).name
    return out
