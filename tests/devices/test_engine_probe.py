"""The engine probe: decode with llama.cpp on this machine and carry the speed model here."""

import json

import pytest

from edgepick.devices import engine_probe as ep
from edgepick.devices.probe import probe
from edgepick.fit.planner import fit_one
from edgepick.fit.speed import DecodeTerms
from edgepick.models.gguf_info import gguf_spec
from edgepick.records.device import DecodeCalibration

# Small shapes so the test decodes in seconds; the real probe uses ep.WEIGHT_SHAPE (352 MB).
TINY_WEIGHTS = (256, 768, 2, 4, 2)
TINY_ATTENTION = ((256, 768, 2, 4, 1), (256, 768, 2, 4, 4))  # K+V rows of 256 and 1024 bytes


@pytest.fixture(scope="module")
def calibrated():
    mp = pytest.MonkeyPatch()
    mp.setattr(ep, "WEIGHT_SHAPE", TINY_WEIGHTS)
    mp.setattr(ep, "ATTENTION_SHAPES", TINY_ATTENTION)
    mp.setattr(ep, "ATTENTION_FILLS", (ep.SHORT_FILL, 512, 1024))
    try:
        base = probe(bandwidth_bytes=64 * 1024**2, engine=False)
        yield ep.engine_probe(base), ep.probe_files()
    finally:
        mp.undo()


def test_probe_decodes_each_file_and_records_what_it_measured(calibrated):
    dev, files = calibrated
    cal = dev.decode_calibration
    assert dev.bandwidth_gbps > 0 and cal.stream_gbps > 0
    assert cal.compute_scale > 0 and list(cal.attention_scales) == [256, 1024]
    assert all(v > 0 for v in cal.attention_scales.values())
    assert cal.method in ("per term", "one scale")
    assert [(t["model"], t["fill"]) for t in cal.timings] == [
        (path.name, fill) for path, fills in files for fill in fills]
    # one pure file per probed weight type, each solved for its own compute scale
    assert [{t.type for t in gguf_spec(str(path)).tensors} for path, _ in files[1:4]] == [
        {"Q4_K", "F32"}, {"Q4_0", "F32"}, {"Q8_0", "F32"}]
    if cal.method == "per term":
        assert set(cal.compute_scales) == set(ep.PROBE_TYPES)
    # every decode was timed (no comparison of times: the tests assert behaviour, not speed)
    assert all(t["measured_ms"] > 0 and t["predicted_ms"] > 0 for t in cal.timings)
    assert len([t for t in cal.timings if t["model"] == files[5][0].name]) == 3
    json.loads(dev.model_dump_json())  # the profile stays serialisable, as --json prints it


def test_planner_applies_the_calibration_it_was_solved_with(calibrated):
    dev, files = calibrated
    cal = dev.decode_calibration
    path, _ = files[0]
    est = fit_one(gguf_spec(str(path)), None, ep.N_CTX, dev, fill=ep.SHORT_FILL + ep.TOKENS // 2)
    assert est.decode_basis == "engine probe"
    probe_row = cal.timings[0]
    assert 1e3 / est.decode_tps_estimate == pytest.approx(probe_row["predicted_ms"], rel=0.02)
    plain = fit_one(gguf_spec(str(path)), None, ep.N_CTX,
                    dev.model_copy(update={"decode_calibration": None}),
                    fill=ep.SHORT_FILL + ep.TOKENS // 2)
    assert plain.decode_basis in ("AVX2 constants", "efficiency 0.65")
    if "avx2" in dev.cpu_features:
        assert 1e3 / plain.decode_tps_estimate == pytest.approx(
            probe_row["predicted_default_ms"], rel=0.02)


def _timings(stream, compute, a_narrow, a_wide, rows):
    """Decode times made from the terms: `compute` scales the probed types' compute."""
    out = []
    for i, (terms, fill, row_bytes) in enumerate(rows):
        a = a_narrow if row_bytes <= 256 else a_wide if row_bytes >= 1024 else None
        work = sum(compute.get(f, 1.0) * v for f, v in terms.compute_s.items())
        out.append({"model": f"m{i}", "fill": fill, "terms": tuple(terms), "row_bytes": row_bytes,
                    "seconds": stream * terms.weight_bytes / 10e9 + work + a * terms.attention_s})
    return out


def _weights(n_bytes, weight_type, compute_s):
    return DecodeTerms(n_bytes, {weight_type: compute_s, "F32": 0.0001, "matmul": 0.0003}, 0.0001)


def _attention(n_bytes, attention_s):
    return DecodeTerms(n_bytes, {"F16": 0.003, "matmul": 0.0002}, attention_s)


# the F16 and the three pure weight files at a short fill, then a narrow and a wide attention
# file at three fills each
ROWS = [(_weights(350_000_000, "F16", 0.004), 16, 1024),
        (_weights(100_000_000, "Q4_K", 0.007), 16, 1024),
        (_weights(105_000_000, "Q4_0", 0.004), 16, 1024),
        (_weights(190_000_000, "Q8_0", 0.003), 16, 1024),
        (_attention(200_000_000, 0.0005), 16, 256),
        (_attention(200_000_000, 0.006), 1024, 256),
        (_attention(200_000_000, 0.012), 2048, 256),
        (_attention(150_000_000, 0.0009), 16, 1024),
        (_attention(150_000_000, 0.01), 1024, 1024),
        (_attention(150_000_000, 0.02), 2048, 1024)]
NO_DRIFT = {k: 1.0 for k in ep.PROBE_TYPES}


def _device():
    return probe(bandwidth_bytes=32 * 1024**2, engine=False).model_copy(
        update={"bandwidth_gbps": 10.0})


def test_solve_recovers_the_stream_rate_and_the_attention_scale_at_each_width():
    cal = ep.solve(_device(), _timings(1.25, NO_DRIFT, 1.4, 0.9, ROWS))
    assert cal.method == "per term"
    assert cal.stream_gbps == pytest.approx(10.0 / 1.25, rel=1e-3)
    assert cal.compute_scale == 1.0 and cal.compute_scales == pytest.approx(NO_DRIFT, abs=1e-3)
    assert cal.attention_scales == pytest.approx({256: 1.4, 1024: 0.9}, rel=1e-3)
    assert all(t["predicted_ms"] == pytest.approx(t["measured_ms"], rel=1e-3) for t in cal.timings)
    # between the probed widths the scale is interpolated in log width, beyond them held flat
    assert cal.attention_scale(512) == pytest.approx((1.4 + 0.9) / 2, rel=1e-3)
    assert cal.attention_scale(100) == pytest.approx(1.4, rel=1e-3)
    assert cal.attention_scale(16384) == pytest.approx(0.9, rel=1e-3)


def test_solve_scales_each_probed_type_apart_pulled_toward_the_constants(monkeypatch):
    # Q4_K decoding faster than the constants say and Q4_0 slower: each type gets its own
    # scale, moved toward what its file measured but not all the way (the prior)
    drift = {"Q4_K": 0.6, "Q4_0": 1.3, "Q8_0": 1.0}
    timings = _timings(1.1, drift, 1.0, 1.0, ROWS)
    cal = ep.solve(_device(), timings)
    assert cal.method == "per term" and cal.compute_scale == 1.0
    assert 0.6 < cal.compute_scales["Q4_K"] < 0.9
    assert 1.05 < cal.compute_scales["Q4_0"] < 1.3
    assert cal.compute_scales["Q8_0"] == pytest.approx(1.0, abs=0.05)

    def misfit(key):
        return sum((t[key] / t["measured_ms"] - 1) ** 2 for t in cal.timings)

    assert misfit("predicted_ms") < misfit("predicted_default_ms") / 4
    # without the prior the decodes alone pin every scale down exactly
    monkeypatch.setattr(ep, "RIDGE", 0.0)
    free = ep.solve(_device(), timings)
    assert free.compute_scales == pytest.approx(drift, rel=1e-3)
    assert free.stream_gbps == pytest.approx(10.0 / 1.1, rel=1e-3)


def test_the_planner_applies_each_type_its_own_compute_scale(calibrated, smollm2_q4_1):
    dev, _ = calibrated
    spec = gguf_spec(str(smollm2_q4_1))  # Q4_1 layers, a Q8_0 embedding, F32 norms
    assert {t.type for t in spec.tensors} == {"Q4_1", "Q8_0", "F32"}
    cal = dev.decode_calibration.model_copy(update={"compute_scales": {}, "compute_scale": 1.0})

    def tps(**scales):
        c = cal.model_copy(update={"compute_scales": scales})
        return fit_one(spec, None, 2048, dev.model_copy(update={"decode_calibration": c}),
                       fill=64).decode_tps_estimate

    assert tps(Q4_1=2.0) < tps(Q8_0=2.0) < tps()  # the Q4_1 layers outweigh the embedding
    assert tps(Q4_K=0.5) == tps()  # no Q4_K tensor in this file
    assert tps(Q4_1=1.0) == tps()


def test_solve_falls_back_to_one_scale_when_the_split_is_implausible():
    timings = _timings(1.0, NO_DRIFT, 1.0, 1.0, ROWS)
    # a stall during the short-fill decode: the long fills came out faster, a negative attention
    timings[5]["seconds"] = timings[4]["seconds"] * 0.7
    timings[6]["seconds"] = timings[4]["seconds"] * 0.7
    cal = ep.solve(_device(), timings)
    assert cal.method == "one scale" and cal.compute_scales == {}
    assert cal.compute_scale == pytest.approx(10.0 / cal.stream_gbps, rel=1e-2)
    assert set(cal.attention_scales.values()) == {cal.compute_scale}
    ratios = [t["measured_ms"] / t["predicted_default_ms"] for t in cal.timings]
    assert cal.compute_scale == pytest.approx(sum(ratios) / len(ratios), rel=1e-2)
    assert cal.compute_scale < 1  # the long-fill decodes came out faster than the constants say
    assert all(t["predicted_ms"] == pytest.approx(t["predicted_default_ms"] * cal.compute_scale,
                                                  rel=1e-2) for t in cal.timings)


def test_a_profile_file_may_carry_a_calibration(tmp_path):
    from edgepick.devices.catalog import load_device
    from edgepick.errors import InputError

    path = tmp_path / "dev.yaml"
    body = ("name: box\ntotal_ram: 8GiB\nmodel_budget: 4GiB\nbandwidth_gbps: 20\n"
            "decode_calibration: {stream_gbps: 18, compute_scale: 1.1, "
            "compute_scales: {Q4_0: 1.2}, attention_scales: {768: 0.9}}\n")
    path.write_text(body)
    cal = load_device(str(path)).decode_calibration
    assert cal == DecodeCalibration(stream_gbps=18, compute_scale=1.1,
                                    compute_scales={"Q4_0": 1.2}, attention_scales={768: 0.9})
    assert (cal.compute_scale_for("Q4_0"), cal.compute_scale_for("Q4_K")) == (1.2, 1.1)
    path.write_text(body.replace("compute_scale: 1.1", "compute_scale: -1"))
    with pytest.raises(InputError, match="compute_scale"):
        load_device(str(path))


def test_a_saved_probe_is_a_device_profile_and_fit_says_what_its_estimate_rests_on(
        calibrated, cli, tmp_path, smollm2_q4_1):
    dev, _ = calibrated
    saved = tmp_path / "me.json"  # what `edgepick probe --json > me.json` writes
    saved.write_text(dev.model_dump_json())
    p = cli("fit", "-m", str(smollm2_q4_1), "--device", str(saved), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)[0]["decode_basis"] == "engine probe"
    p = cli("fit", "-m", str(smollm2_q4_1), "--device", str(saved))
    assert p.returncode == 0 and "calibrated by decoding with the engine here" in p.stdout
    # a catalog device is estimated from its own figures, never this host's (issue 24)
    p = cli("fit", "-m", str(smollm2_q4_1), "--device", "raspberry-pi-5", "--json")
    assert json.loads(p.stdout)[0]["decode_basis"] == "device spec"


def test_probe_cli_without_the_engine(cli, tmp_path):
    p = cli("probe", "--json", "--allow-contended", env={"EDGEPICK_HOME": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["decode_calibration"] is None


def test_a_failed_engine_probe_keeps_the_rest_of_the_probe(monkeypatch):
    def broken():
        raise OSError("disk full")

    monkeypatch.setattr(ep, "probe_files", broken)
    dev = probe(bandwidth_bytes=32 * 1024**2, engine=True)
    assert dev.decode_calibration is None and dev.bandwidth_gbps > 0
    assert "could not build its models: disk full" in dev.extra["engine_probe_error"]
