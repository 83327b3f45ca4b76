"""A power source from a package outside src/ (issue 33 item 5): registered by an entry point,
found by `probe`, preferred over the built-in sysfs counters, and used by the bench stage; a
broken one is a line in probe's list, never a failed bench."""

from __future__ import annotations

import importlib

import pytest

# the module, not the function of the same name that edgepick.power exports
power_detect = importlib.import_module("edgepick.power.detect")

PLUGIN = '''
import time

from edgepick.power.base import PowerReading, PowerSource


class WallMeter(PowerSource):
    """A wall-plug meter: 7 W, always."""
    name = "wallmeter"
    kind = "power"
    covers = "the whole board at the plug"

    def paths(self):
        return ["usb:wallmeter0"]

    def read(self):
        return PowerReading(t=time.monotonic(), power_w=7.0, raw=time.monotonic())


def find(root):
    return WallMeter(), None


def broken(root):
    raise RuntimeError("meter unplugged")
'''


@pytest.fixture
def wall_meter(tmp_path, monkeypatch):
    from plugin_dist import write_plugin

    pkg = write_plugin(tmp_path / "site", "wall-meter", "wall_meter", PLUGIN,
                       "edgepick.power_sources",
                       {"wallmeter": "wall_meter:find", "flaky": "wall_meter:broken"})
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.setenv("PYTHONPATH", str(pkg))  # a bench worker finds it too
    monkeypatch.setattr(power_detect, "SOURCES", power_detect.SOURCES.fresh())


def test_probe_lists_an_installed_source_first_and_a_broken_one_in_a_line(wall_meter, tmp_path):
    import power_sysfs as fx
    from edgepick.devices.probe import power_and_thermal_sources

    fx.rapl(tmp_path)
    found = power_and_thermal_sources(str(tmp_path))
    assert found["power"].startswith("wallmeter (the whole board at the plug): usb:wallmeter0")
    lines = found["power_sources"]
    assert any(line.startswith("flaky: failed: RuntimeError: meter unplugged") for line in lines)
    assert any(line.startswith("rapl") for line in lines)  # the built-in ones are still listed


def test_bench_measures_energy_with_the_installed_source(wall_meter, tiny_model, tmp_path):
    from edgepick.bench.runner import measure_config
    from edgepick.bench.sweeps import BenchRequest, expand
    from edgepick.inputs import resolve_ref
    from edgepick.power import PowerConfig

    req = BenchRequest(models=[resolve_ref(tiny_model)], prompt_lengths=[32], gen_tokens=16,
                       warmup=1, repeats=2, threads=[1],
                       power=PowerConfig(period_s=0.1, idle_s=0.3, sysfs_root=str(tmp_path)))
    res = measure_config(expand(req)[0], req)
    assert res.status == "ok", res.error
    assert res.energy.source.startswith("wallmeter"), res.energy
    assert res.energy.power_w == pytest.approx(7.0)
