"""probe lists the power and thermal sources it finds, with their paths; none in one line."""

from __future__ import annotations

import power_sysfs as fx
from edgepick.cli.cmd_probe import _power_rows
from edgepick.devices.probe import power_and_thermal_sources
from edgepick.power import NO_SOURCE


def test_sources_listed_with_paths(tmp_path):
    fx.rapl(tmp_path)
    fx.battery(tmp_path, ac_online=1)
    fx.thermal(tmp_path, {"x86_pkg_temp": 55000})
    fx.cpufreq(tmp_path, cur_khz=2_000_000)
    found = power_and_thermal_sources(str(tmp_path))
    assert found["power"].startswith("rapl (CPU package + DRAM, not the board)")
    assert "intel-rapl:0/energy_uj" in found["power"]
    assert any(line.startswith("battery") and "on AC power" in line
               for line in found["power_sources"])
    assert found["thermal_sensors"]["x86_pkg_temp (thermal_zone0)"].endswith("thermal_zone0/temp")
    rows = dict(_power_rows(found))
    assert rows["thermal sensors"] == "1 found" and "cpufreq" in rows["cpu frequency"]


def test_nothing_found_is_one_line_each(tmp_path):
    rows = _power_rows(power_and_thermal_sources(str(tmp_path)))
    assert rows[0][1].startswith(NO_SOURCE) and "\n" not in rows[0][1]
    assert [k for k, _ in rows] == ["power", "thermal sensors", "cpu frequency"]
