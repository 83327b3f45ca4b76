"""Energy figures of one measurement from the parent's power readings and the worker's run
times (definitions in docs/metrics.md, "Energy"). Both use time.monotonic(), one clock for
every process on the host."""

from __future__ import annotations

from edgepick.power.energy import EnergyCurve
from edgepick.records.bench import EnergyFigures


def run_spans(raw: dict) -> tuple[list[tuple[float, float]], int, list[tuple[float, float]], int]:
    """Prefill spans with their prompt tokens, decode spans with their tokens after the first.
    Concurrent requests share one span per run: submission → the last prompt processed, then
    the last first token → the last token."""
    prefill, decode, n_prompt, n_decode = [], [], 0, 0
    for run in raw.get("runs") or []:
        t0, reqs = run.get("t0"), [q for q in run["requests"] if q["token_times"]]
        if t0 is None or not reqs:
            continue
        end_prefill = max(q.get("prefill_s") or q["token_times"][0] for q in reqs)
        first = max(q["token_times"][0] for q in reqs)
        last = max(q["token_times"][-1] for q in reqs)
        prefill.append((t0, t0 + end_prefill))
        n_prompt += sum(q.get("prefill_tokens") or q["prompt_tokens"] for q in reqs)
        if last > first:
            decode.append((t0 + first, t0 + last))
            n_decode += sum(max(0, q["generated_tokens"] - 1) for q in reqs)
    return prefill, n_prompt, decode, n_decode


def _net_per_token(curve: EnergyCurve, spans, tokens: int, idle: float | None) -> float | None:
    """Joules above idle per token; None when not measurable, including when the run drew no
    more than idle (a meter covering far more than the device, or a host busy throughout):
    a 0 there would be a figure nobody measured."""
    j = curve.intervals_joules(spans)
    if j is None or idle is None or tokens <= 0:
        return None
    net = j - idle * sum(b - a for a, b in spans)
    return net / tokens if net > 0 else None


def energy_figures(curve: EnergyCurve | None, source: str | None, note: str | None,
                   idle_span: tuple[float, float] | None, raw: dict | None) -> EnergyFigures:
    if curve is None or not raw:
        return EnergyFigures(source=source, note=note)
    idle = curve.watts(*idle_span) if idle_span else None
    prefill, n_prompt, decode, n_decode = run_spans(raw)
    spans = prefill + decode
    power = None
    if spans:
        lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
        power = curve.watts(lo, hi)
        if power is None:
            note = curve.problem(lo, hi) or note
    if idle is None and idle_span:
        note = note or f"idle power: {curve.problem(*idle_span) or 'not measured'}"
    if power is not None and idle is not None and power <= idle:
        note = note or (f"power during the run ({power:.2f} W) not above idle ({idle:.2f} W): "
                        "the per-token energy cannot be told apart from the rest of the host")
    return EnergyFigures(
        source=source, note=note, idle_power_w=_round(idle), power_w=_round(power),
        net_power_w=_round(None if power is None or idle is None or power <= idle
                           else power - idle),
        energy_per_token_j=_round(_net_per_token(curve, decode, n_decode, idle), 5),
        prefill_energy_per_token_j=_round(_net_per_token(curve, prefill, n_prompt, idle), 6))


def _round(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else round(v, digits)
