"""The scenario's limits on bench medians, by the prompt length decide reads each at:
the bench repeats a gated point until each is settled (bench/stopping.py).

A gate counts when decide judges it on a median's order-statistic interval (data/gates.yaml
`interval: order`): TTFT P50, decode speed, and end-to-end P50/P95 when the scenario gives the
answer length (without it decide uses the candidate's own answers, known only after evaluation).
Tails, memory and decay are not medians: more repetitions do not settle them.
"""

from __future__ import annotations

from edgepick.bench.stopping import Limit
from edgepick.decide.gates import context_length, limits
from edgepick.gate_spec import gate_table

# gate metric -> the per-repetition figure the bench judges it on
MEDIAN_FIGURES = {"ttft_p50_ms": "ttft_ms", "decode_tps": "decode_tps",
                  "e2e_p50_ms": "answer_ms", "e2e_p95_ms": "answer_ms"}


def bench_limits(scenario, lengths: list[int]) -> dict[int, list]:
    """Prompt length -> the Limits on its concurrency-1 point. `scenario`: the one decide
    gates under (plan/context_from.gated_scenario), so each limit lands on the length decide
    reads it at: the context percentile, else the shortest prompt."""
    if not lengths:
        return {}
    values = limits(scenario, None)
    out: dict[int, list] = {}
    for g in gate_table().values():
        figure = MEDIAN_FIGURES.get(g.metric)
        if figure is None or g.interval != "order" or values.get(g.name) is None:
            continue
        n = context_length(g.at, scenario) if scenario.context_tokens is not None \
            else min(lengths)
        if n not in lengths:
            continue  # not measured (does not fit n_ctx): the gate stays unmeasured
        out_tokens = None
        if figure == "answer_ms":
            ot = scenario.output_tokens
            if ot is None:
                continue
            out_tokens = ot.p50 if g.at == "p50" else (ot.p95 or ot.p50)
        out.setdefault(n, []).append(Limit(gate=g.name, metric=figure, direction=g.direction,
                                           limit=values[g.name], out_tokens=out_tokens))
    return out
