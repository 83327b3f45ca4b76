"""Energy, heat and host load from bench payloads into the summary, and the two rules decide
applies to them (issue 28; docs/metrics.md):

- a speed gate that fails on a *contended* measurement (other work used more than the bench's
  share of the CPUs) is *undetermined*, naming the load, never *fail*: the neighbours, not the
  candidate, may have made it slow (seed 000 §5.2);
- `sustained_power_max_w` defaults to 0.6 × the device's `power_budget_w` (seed 003 §2.3), and
  only where power was measured: with no counter the gate is not set rather than unmeasured
  for every candidate.
A figure nobody measured stays None (unmeasured), never 0.
"""

from __future__ import annotations

from edgepick.records.decision import CandidateSummary, Figure
from edgepick.records.deploy import Gate

POWER_BUDGET_SHARE = 0.6  # seed 003 §2.3: keep sustained power within 60% of what it dissipates


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def read_bench_energy(payload: dict, s: CandidateSummary) -> None:
    """Energy, throttling, memory growth and contention of one stored BenchResult."""
    energy = payload.get("energy") or {}
    sustain = payload.get("sustain") if isinstance(payload.get("sustain"), dict) else None
    if energy.get("source") or energy.get("note"):
        s.power_source = energy.get("source") or energy.get("note")
    power = _num(energy.get("power_w"))
    if sustain is not None:
        timeline = sustain.get("timeline") or []
        s.sustained_timeline = [p for p in timeline if isinstance(p, dict)]
        s.throttled_after_s = _num(sustain.get("throttled_after_s"))
        s.throttle_reason = sustain.get("throttle_reason")
        growth = _num(sustain.get("memory_growth_mib_per_1k"))
        if growth is not None:
            s.figures["memory_growth"] = Figure(value=growth)
        if power is not None:
            s.sustained_power_w = power
    else:
        for field in ("power_w", "idle_power_w", "prefill_energy_per_token_j"):
            v = _num(energy.get(field))
            if v is not None and getattr(s, field) is None:
                setattr(s, field, v)
        per_token = _num(energy.get("energy_per_token_j"))
        if per_token is not None and "energy_per_token_j" not in s.figures:
            s.figures["energy_per_token_j"] = Figure(value=per_token)
    # a sustained run on a busy host is contended as much as a timed one: its decay is speed
    if payload.get("contended") and s.contended_share is None:
        load = payload.get("host_load") or {}
        s.contended_share = (_num(load.get("other_cpu_share")) or 0.0) + \
            (_num(load.get("steal_share")) or 0.0)
    sustained = s.sustained_power_w if s.sustained_power_w is not None else s.power_w
    if sustained is not None:
        s.figures["sustained_power_w"] = Figure(value=sustained)


def contended_speed(gate: Gate, s: CandidateSummary) -> Gate:
    """A speed gate (the table's `contended: true`: TTFT, decode, end-to-end latency, decay)
    failing on a contended measurement is undetermined, with the load named."""
    from edgepick.decide.gate_spec import gate_of

    spec = gate_of(gate.metric)
    if gate.verdict == "fail" and spec is not None and spec.contended \
            and s.contended_share is not None:
        return gate.model_copy(update={"verdict": "undetermined",
                                       "contended_share": round(s.contended_share, 3)})
    return gate


def sustained_power_limit(scenario, power_budget_w: float | None,
                          summaries: list[CandidateSummary]):
    """The scenario with `sustained_power_max_w` at 0.6 × the device's budget when the scenario
    sets none, the device has a budget and some candidate's power was measured."""
    c = scenario.constraints
    if c.limit("sustained_power_max_w") is not None or not power_budget_w:
        return scenario
    if not any(s.figures.get("sustained_power_w") for s in summaries):
        return scenario
    limit = round(POWER_BUDGET_SHARE * power_budget_w, 3)
    return scenario.model_copy(update={"constraints": c.model_copy(
        update={"sustained_power_max_w": limit})})
