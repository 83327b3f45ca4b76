"""`--device local`: measured once, cached per machine and engine version with its date; the
engine calibration only on request; a second fit gives the same estimate without probing."""

import json

import pytest

from edgepick.devices import local
from edgepick.devices import probe as probe_mod
from edgepick.records.device import DecodeCalibration


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPICK_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def probes(monkeypatch):
    """Count the probes taken; the bandwidth probe reads a small buffer to keep the test short,
    and the engine calibration (20-30 s, tested in test_engine_probe.py) is a fixed record."""
    calls = []
    real = probe_mod.probe

    def counted(bandwidth_bytes=0, engine=False):
        calls.append(engine)
        dev = real(bandwidth_bytes=32 * 1024**2, engine=False)
        if engine:
            dev = dev.model_copy(update={"decode_calibration": DecodeCalibration(
                stream_gbps=dev.bandwidth_gbps, attention_scales={768: 1.0}, threads=2)})
        return dev

    monkeypatch.setattr(local, "probe", counted)  # the probe local_device takes
    return calls


def test_measured_once_then_read_from_the_cache(home, probes):
    first = local.local_device()
    assert probes == [False]  # bandwidth only: the engine calibration is opt-in
    assert first.extra["probe"]["source"] == "measured now"
    second = local.local_device()
    assert probes == [False]
    assert second.bandwidth_gbps == first.bandwidth_gbps
    assert second.extra["probe"]["source"] == "cached"
    assert second.extra["probe"]["measured_at"] == first.extra["probe"]["measured_at"]
    assert "cached probe of 20" in local.describe(second) and "--refresh" in local.describe(second)
    assert local.cache_path().parent == home / "devices"


def test_calibrate_and_refresh_measure_again(home, probes):
    local.local_device()
    cal = local.local_device(calibrate=True)
    assert probes == [False, True] and cal.decode_calibration is not None
    assert "engine calibration of 20" in local.describe(local.local_device())
    assert probes == [False, True]
    local.local_device(refresh=True)  # a calibrated machine is calibrated again
    assert probes == [False, True, True]


def test_another_engine_version_or_machine_is_not_this_cache(home, probes, monkeypatch):
    local.local_device()
    ident = local.machine_identity()
    monkeypatch.setattr(local, "machine_identity", lambda: {**ident, "engine": "other 9.9"})
    local.local_device()
    assert probes == [False, False]


def test_a_corrupt_cache_is_measured_again(home, probes):
    local.local_device()
    local.cache_path().write_text("{not json")
    assert local.local_device().extra["probe"]["source"] == "measured now"


def test_second_fit_on_local_reads_the_cache_and_gives_the_same_estimate(cli, home, tiny_model):
    env = {"EDGEPICK_HOME": str(home), "COLUMNS": "80"}
    first = cli("fit", "-m", tiny_model, "--device", "local", "--json", env=env)
    assert first.returncode == 0, first.stderr
    assert "measuring this machine's memory bandwidth" in first.stderr
    second = cli("fit", "-m", tiny_model, "--device", "local", "--json", env=env)
    assert second.returncode == 0, second.stderr
    assert "cached probe of" in second.stderr and "measuring" not in second.stderr
    est = [json.loads(p.stdout)[0]["decode_tps_estimate"] for p in (first, second)]
    assert est[0] == est[1]
    wrong = cli("fit", "-m", tiny_model, "--device", "raspberry-pi-5", "--calibrate", env=env)
    assert wrong.returncode == 2 and "use --device local" in wrong.stderr


def test_a_plan_on_local_uses_the_cached_calibration_without_probing(home, probes, monkeypatch):
    """What `make run` (edgepick run default, device: local) does: read, never re-probe."""
    from edgepick.devices.catalog import load_device

    local.local_device(calibrate=True)

    def boom(*a, **k):
        raise AssertionError("the engine was probed again")

    monkeypatch.setattr(probe_mod, "engine_probe", boom)
    dev = load_device("local")
    assert probes == [True] and dev.decode_calibration is not None
    assert dev.extra["probe"]["source"] == "cached"


def test_the_plan_runner_fits_with_the_cached_calibration_and_probes_nothing(home, probes,
                                                                             tmp_path):
    """`make run` goes through plan/runner.run_plan: on device local it reads the cached probe,
    its engine calibration included, and measures nothing of the machine."""
    from edgepick.plan.loader import load_plan
    from edgepick.plan.runner import run_plan
    from edgepick.store import ResultStore

    local.local_device(calibrate=True)
    plan = tmp_path / "plan.yaml"
    plan.write_text("name: local-fit\ndevice: local\noutput: ./out\ncandidates:\n"
                    "  - model: tiny\nbench: {enabled: false}\neval: {enabled: false}\n"
                    "fidelity: {enabled: false}\nreport: {lang: en}\n", encoding="utf-8")
    lp = load_plan(str(plan))
    run_plan(lp)
    assert probes == [True]  # the calibration above, and nothing since
    with ResultStore(lp.store_path) as st:
        (fit,) = [p for _, p in st.items("fit")]
    assert fit["decode_basis"] == "engine probe"
