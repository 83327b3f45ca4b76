"""Energy, heat and host load from bench payloads into the summary, and the two rules decide
applies to them (docs/metrics.md):

- a speed gate that fails on a *contended* measurement (other work used more than the bench's
  share of the CPUs) is *undetermined*, naming the load, never *fail*: the neighbours, not the
  candidate, may have made it slow (seed 000 §5.2);
- `sustained_power_max_w` defaults to 0.6 × the device's `power_budget_w` (seed 003 §2.3), and
  only where power was measured: with no counter the gate is not set rather than unmeasured
  for every candidate.
A figure nobody measured stays None (unmeasured), never 0.
"""

from __future__ import annotations

from edgepick.gate_spec import gate_of
from edgepick.records.bench import BenchResult
from edgepick.records.decision import CandidateSummary, Figure
from edgepick.records.deploy import Gate

POWER_BUDGET_SHARE = 0.6  # seed 003 §2.3: keep sustained power within 60% of what it dissipates


def read_bench_energy(r: BenchResult, s: CandidateSummary) -> None:
    """Energy, throttling, memory growth and contention of one stored BenchResult."""
    energy, sustain = r.energy, r.sustain
    if energy is not None and (energy.source or energy.note):
        s.power_source = energy.source or energy.note
    power = energy.power_w if energy is not None else None
    if sustain is not None:
        s.sustained_timeline = [p.model_dump(mode="json") for p in sustain.timeline]
        s.throttled_after_s = sustain.throttled_after_s
        s.throttle_reason = sustain.throttle_reason
        if sustain.memory_growth_mib_per_1k is not None:
            s.figures["memory_growth"] = Figure(value=sustain.memory_growth_mib_per_1k)
        if power is not None:  # the sustained run's own mean wins over the timed runs'
            s.figures["sustained_power_w"] = Figure(value=power)
    elif energy is not None:
        for field in ("power_w", "idle_power_w", "prefill_energy_per_token_j"):
            v = getattr(energy, field)
            if v is not None and getattr(s, field) is None:
                setattr(s, field, v)
        if energy.energy_per_token_j is not None and "energy_per_token_j" not in s.figures:
            s.figures["energy_per_token_j"] = Figure(value=energy.energy_per_token_j)
    # a sustained run on a busy host is contended as much as a timed one: its decay is speed
    if r.contended and s.contended_share is None:
        load = r.host_load
        s.contended_share = ((load.other_cpu_share or 0.0) + (load.steal_share or 0.0)
                             if load is not None else 0.0)
    if s.power_w is not None and "sustained_power_w" not in s.figures:
        s.figures["sustained_power_w"] = Figure(value=s.power_w)


def contended_speed(gate: Gate, s: CandidateSummary) -> Gate:
    """A speed gate (the table's `contended: true`: TTFT, decode, end-to-end latency, decay)
    failing on a contended measurement is undetermined, with the load named."""
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
