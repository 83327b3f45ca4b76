"""Fit never contradicts itself: the estimate sits under its bound at the same KV fill on every
device, moves with the context, and carries the error band the held-out check validated."""

import pytest

from edgepick.devices.catalog import catalog
from edgepick.fit.planner import fit_one
from edgepick.fit.speed import HELDOUT_RATIOS
from edgepick.models.gguf_info import gguf_spec
from edgepick.records.device import DecodeCalibration
from edgepick.records.fit import decode_tps_at


@pytest.fixture(scope="module")
def spec(smollm2_q4_1):
    return gguf_spec(smollm2_q4_1)


def test_catalog_estimate_never_exceeds_its_bound_and_counts_the_kv_reads(spec):
    """Issue 14: raspberry-pi-5, SmolLM2 Q4_1 at ctx 8192 showed bound 90 and estimate 115."""
    pi = catalog()["raspberry-pi-5"]
    short, long = fit_one(spec, None, 2048, pi), fit_one(spec, None, 8192, pi)
    for r in (short, long):
        assert r.decode_tps_estimate <= r.decode_tps_bound
    assert long.decode_tps_estimate < short.decode_tps_estimate  # more KV read per token
    assert long.kv_fill_tokens == 4096 and long.decode_tps_bound == pytest.approx(89.5, abs=1)


@pytest.mark.parametrize("name", sorted(catalog()))
def test_every_catalog_device_keeps_estimate_band_and_bound_in_order(spec, name):
    dev = catalog()[name]
    for ctx in (512, 4096, 8192):
        r = fit_one(spec, None, ctx, dev)
        assert r.decode_tps_estimate <= r.decode_tps_bound
        if r.decode_tps_band is None:
            assert r.decode_basis not in HELDOUT_RATIOS  # no band claimed without a validation
        else:
            low, high = r.decode_tps_band
            assert low <= r.decode_tps_estimate <= high <= r.decode_tps_bound


def test_constants_band_is_the_held_out_spread(spec):
    # the AVX2 constants describe this host: a profile measured here, never a catalog laptop
    laptop = next(d for d in catalog().values() if "avx2" in d.cpu_features)
    laptop = laptop.model_copy(update={"measured": True})
    r = fit_one(spec, None, 2048, laptop)
    assert r.decode_basis == "AVX2 constants" and r.decode_threads == 2
    lo, hi = HELDOUT_RATIOS["AVX2 constants"]
    assert r.decode_tps_band[0] == pytest.approx(r.decode_tps_estimate / hi, rel=1e-3)
    assert r.decode_tps_band[1] == pytest.approx(
        min(r.decode_tps_bound, r.decode_tps_estimate / lo), rel=1e-3)


def test_an_engine_faster_than_the_probe_raises_the_bound_not_past_it(spec):
    dev = catalog()["raspberry-pi-5"].model_copy(update={
        "cpu_features": ["avx2"], "decode_calibration": DecodeCalibration(
            stream_gbps=60.0, compute_scale=0.1, attention_scales={768: 0.1}, threads=4)})
    r = fit_one(spec, None, 2048, dev)
    assert r.decode_basis == "engine probe" and r.decode_threads == 4
    assert r.decode_tps_estimate <= r.decode_tps_bound
    assert r.decode_tps_bound == pytest.approx(60e9 / r.bytes_per_token, rel=1e-3)


def test_the_stored_curve_gives_the_estimate_at_any_fill(spec):
    pi = catalog()["raspberry-pi-5"]
    r = fit_one(spec, None, 8192, pi)
    assert decode_tps_at(r.decode_curve, r.kv_fill_tokens) == pytest.approx(
        r.decode_tps_estimate, rel=1e-3)
    at_bench = fit_one(spec, None, 8192, pi, fill=192)  # bench: 128-token prompt + 64 generated
    assert decode_tps_at(r.decode_curve, 192) == pytest.approx(at_bench.decode_tps_estimate,
                                                               rel=0.01)
    # JSON turns the fills into strings; the reader takes either
    as_json = {str(k): v for k, v in r.decode_curve.items()}
    assert decode_tps_at(as_json, 192) == decode_tps_at(r.decode_curve, 192)


def test_a_catalog_estimate_does_not_change_with_this_hosts_calibration(spec, monkeypatch):
    """Issue 24: laptop-16gb-cpu was estimated with the constants fitted on this 2-core host."""
    from edgepick.fit import speed

    laptop = catalog()["laptop-16gb-cpu"]
    before = fit_one(spec, None, 8192, laptop)
    assert before.decode_basis == "device spec" and before.decode_tps_band is None
    assert before.decode_threads == laptop.threads_default
    monkeypatch.setattr(speed, "AVX2_EFFICIENCY", {k: v / 2 for k, v in speed.AVX2_EFFICIENCY.items()})
    monkeypatch.setattr(speed, "ATTENTION_S_PER_KV_HEAD", speed.ATTENTION_S_PER_KV_HEAD * 3)
    monkeypatch.setattr(speed, "MATMUL_OVERHEAD_S", speed.MATMUL_OVERHEAD_S * 3)
    after = fit_one(spec, None, 8192, laptop)
    assert after.decode_tps_estimate == before.decode_tps_estimate
    assert after.decode_curve == before.decode_curve
    # the same profile said to be this host takes the (changed) constants
    host = laptop.model_copy(update={"measured": True})
    assert fit_one(spec, None, 8192, host).decode_basis == "AVX2 constants"
    # and its own figures move it: twice the bandwidth, faster
    fast = laptop.model_copy(update={"bandwidth_gbps": 2 * laptop.bandwidth_gbps})
    assert fit_one(spec, None, 8192, fast).decode_tps_estimate > before.decode_tps_estimate
