"""The power, energy and memory-growth gates, the 0.6 x power-budget default (seed 003 §2.3)
applied only where power was measured, and energy in the efficiency layer of the score."""

from __future__ import annotations

from edgepick.decide.adapters import bench_adapter
from edgepick.decide.gates import candidate_gates
from edgepick.decide.power_figures import sustained_power_limit
from edgepick.decide.scenarios import validate_scenario
from edgepick.decide.scoring import score
from edgepick.records.decision import CandidateSummary
from decide_payloads import bench


def _scenario(**constraints):
    return validate_scenario({"name": "t", "constraints": {"peak_memory_max": None,
                                                           **constraints}}, "test")


def _payload(sweep="prompt_length", energy=None, sustain=None, **kw):
    return bench("m.gguf", sweep=sweep, settings={"prompt_tokens": 128, "gen_tokens": 64},
                 energy=energy, sustain=sustain, **kw)


def _summary(*payloads) -> CandidateSummary:
    s = CandidateSummary(candidate="c", model="m.gguf")
    for p in payloads:
        bench_adapter(p, lambda *a, **k: s)
    return s


SOURCE = "rapl (CPU package + DRAM, not the board): /sys/class/powercap/intel-rapl:0/energy_uj"


def test_figures_read_from_bench_and_gated():
    s = _summary(
        _payload(energy={"source": SOURCE, "power_w": 4.2, "idle_power_w": 1.1,
                         "energy_per_token_j": 0.05, "prefill_energy_per_token_j": 0.002}),
        _payload("sustain", energy={"source": SOURCE, "power_w": 4.0},
                 sustain={"duration_s": 120, "window_s": 12, "window_tps": [20, 19],
                          "decay_pct": 5, "flagged": False, "memory_growth_mib_per_1k": 3.5,
                          "throttled_after_s": 84.0, "throttle_reason": "decode 12% slower",
                          "timeline": [{"t_s": 0, "decode_tps": 20, "power_w": 4.0}]}))
    assert (s.power_w, s.idle_power_w, s.sustained_power_w) == (4.2, 1.1, 4.0)
    assert s.power_source == SOURCE and s.throttled_after_s == 84.0
    sc = sustained_power_limit(_scenario(energy_per_token_max_j=0.1, memory_growth_max=2.0),
                               5.0, [s])
    assert sc.constraints.limit("sustained_power_max_w") == 3.0  # 0.6 x 5 W
    got = {g.metric: (g.verdict, g.value) for g in candidate_gates(s, sc, None)}
    assert got == {"sustained_power_w": ("fail", 4.0), "energy_per_token_j": ("pass", 0.05),
                   "memory_growth": ("fail", 3.5)}


def test_without_a_power_counter_nothing_is_zero_and_no_default_gate():
    s = _summary(_payload(energy={"note": "no power counter here (none)"}))
    assert s.power_source.startswith("no power counter here")
    assert s.power_w is None and s.energy_per_token_j is None and not s.figures
    sc = sustained_power_limit(_scenario(), 5.0, [s])
    assert sc.constraints.limit("sustained_power_max_w") is None
    gates = candidate_gates(s, _scenario(energy_per_token_max_j=0.1), None)
    assert [(g.metric, g.verdict) for g in gates] == [("energy_per_token_j", "unmeasured")]


def test_energy_weighs_in_the_efficiency_layer_only_where_measured():
    sc = _scenario()
    a = CandidateSummary(candidate="a", model="a", decode_tps=20.0, energy_per_token_j=0.05)
    b = CandidateSummary(candidate="b", model="b", decode_tps=20.0, energy_per_token_j=0.10)
    out = score([a, b], sc)
    assert out["a"]["layers"]["efficiency"] > out["b"]["layers"]["efficiency"]
    assert out["b"]["metrics"]["energy_per_token"] == 0.5
    plain = score([CandidateSummary(candidate="a", model="a", decode_tps=20.0),
                   CandidateSummary(candidate="b", model="b", decode_tps=20.0)], sc)
    assert plain["a"]["layers"]["efficiency"] == plain["b"]["layers"]["efficiency"]
    assert "energy_per_token" not in plain["a"]["metrics"]
