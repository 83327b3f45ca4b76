"""The device catalog, user profiles and the probe of this machine."""

import pytest
import yaml

from edgepick.devices import catalog, load_device
from edgepick.devices.probe import measure_bandwidth, probe
from edgepick.errors import InputError


def test_catalog_has_the_spec_profiles():
    cat = catalog()
    assert len(cat) >= 8
    for name in ("flagship-phone", "midrange-phone", "raspberry-pi-5", "jetson-orin-nano",
                 "laptop-16gb-cpu", "laptop-8gb-gpu", "ar-glasses"):
        assert name in cat
    for dev in cat.values():
        assert 0 < dev.model_budget_bytes < dev.total_ram_bytes
        assert dev.bandwidth_gbps > 0 and dev.power_budget_w


def test_user_profile_file(tmp_path):
    path = tmp_path / "board.yaml"
    path.write_text(yaml.safe_dump({"name": "my-board", "total_ram": "2GiB", "model_budget": "1.5GiB",
                                    "bandwidth_gbps": 8.5}))
    dev = load_device(str(path))
    assert dev.name == "my-board" and dev.model_budget_bytes == int(1.5 * 1024**3)


def test_bad_profile_names_file_and_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "total_ram": "lots", "model_budget": "1GiB",
                                    "bandwidth_gbps": 1}))
    with pytest.raises(InputError, match="total_ram"):
        load_device(str(path))
    path.write_text("name: [unclosed")
    with pytest.raises(InputError, match="bad.yaml:"):
        load_device(str(path))


def test_probe_measures_this_machine():
    dev = probe(bandwidth_bytes=64 * 1024**2, engine=False)
    assert dev.measured and dev.name == "local"
    assert dev.cores >= 1 and dev.total_ram_bytes > dev.model_budget_bytes > 0
    assert dev.bandwidth_gbps > 0 and dev.compute_gflops > 0
    bw = dev.extra["bandwidth"]
    assert bw["min"] <= bw["median"] <= bw["max"]
    assert "load_avg" in dev.extra


def test_bandwidth_runs_are_reported():
    out = measure_bandwidth(32 * 1024**2, runs=3, threads=2)
    assert out["runs"] == 3 and out["threads"] == 2 and out["buffer_bytes"] == 32 * 1024**2
