"""Memory growth over the sustained run: a shim that leaks 1 MiB per 100 tokens is flagged. The
real engine, unflagged, is checked by the bench CLI's sustained run on SmolLM2
(tests/bench/test_sustained_report.py::test_sustained_run_on_smollm2) and by doctor's healthy
deploy (tests/doctor/test_doctor_output.py): a second run of it here cost half this test."""

from __future__ import annotations

from edgepick.bench.runner import measure_config
from edgepick.bench.sustained import memory_growth, throttle_onset
from edgepick.bench.sweeps import BenchRequest, expand
from edgepick.records.bench import TimelinePoint
from edgepick.inputs import resolve_ref
from leaky_engine import measure_sustain_leaky


def _sustain(tiny_model: str, worker):
    req = BenchRequest(models=[resolve_ref(tiny_model)], prompt_lengths=[16], gen_tokens=16,
                       warmup=1, repeats=1, threads=[1], sustain_s=4.0)
    cfg = [c for c in expand(req) if c.sweep == "sustain"][0]
    res = measure_config(cfg, req, worker=worker)
    assert res.status == "ok", res.error
    return res.sustain


def test_leaking_engine_is_flagged(tiny_model):
    leaky = _sustain(tiny_model, measure_sustain_leaky)
    assert leaky.memory_growth_flagged
    assert 7 < leaky.memory_growth_mib_per_1k < 13  # 10 MiB per 1000 tokens leaked


def test_memory_growth_slope_and_too_few_points():
    mib = 2**20
    pts = [(i, i * 100, 500 * mib + i * mib) for i in range(10)]  # 1 MiB per 100 tokens
    assert memory_growth(pts) == (10.0, True)
    flat = [(i, i * 100, 500 * mib) for i in range(10)]
    assert memory_growth(flat) == (0.0, False)
    assert memory_growth(pts[:3]) == (None, False)


def _pt(t, tps, temp=None, freq=None):
    return TimelinePoint(t_s=t, decode_tps=tps, temperature_c=temp, cpu_freq_share=freq)


def test_throttling_needs_a_temperature_rise_before_the_drop():
    heated = [_pt(0, 100, 50), _pt(10, 99, 56), _pt(20, 80, 60)]
    at, why = throttle_onset(heated)
    assert at == 20 and "rose 10.0 °C" in why
    # slower but no hotter: not thermal (perhaps a neighbour), not called throttling
    assert throttle_onset([_pt(0, 100, 50), _pt(10, 70, 50.5)]) == (None, None)
    capped = [_pt(0, 100, None, 1.0), _pt(10, 100, None, 0.98), _pt(20, 90, None, 0.7)]
    at, why = throttle_onset(capped)
    assert at == 20 and "70% of its maximum" in why
