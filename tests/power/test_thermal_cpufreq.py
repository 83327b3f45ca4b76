"""Temperature sensors and CPU frequency caps on fixture trees."""

from __future__ import annotations

import power_sysfs as fx
from edgepick.power import cpufreq, thermal


def test_every_zone_and_hwmon_sensor_named(tmp_path):
    fx.thermal(tmp_path, {"x86_pkg_temp": 61000, "acpitz": 45500},
               hwmon={"Package id 0": 62000, "Core 0": 58000})
    files = thermal.sensor_files(tmp_path)
    temps = thermal.read_all(files)
    assert temps["x86_pkg_temp (thermal_zone0)"] == 61.0
    assert temps["coretemp/Core 0 (hwmon0)"] == 58.0
    assert thermal.hottest(temps) == ("coretemp/Package id 0 (hwmon0)", 62.0)


def test_implausible_and_missing_sensors_dropped(tmp_path):
    fx.thermal(tmp_path, {"bogus": 255000, "soc": 40000})
    files = thermal.sensor_files(tmp_path)
    (tmp_path / "sys/class/thermal/thermal_zone1/temp").unlink()
    assert thermal.read_all(files) == {}
    assert thermal.hottest({}) is None


def test_cpufreq_cap_and_current_share(tmp_path):
    fx.cpufreq(tmp_path, cur_khz=1_500_000, max_khz=3_000_000, cap_khz=2_400_000)
    got = cpufreq.read(cpufreq.policy_dirs(tmp_path))
    assert got == {"cur_share": 0.5, "cap_share": 0.8}
    assert cpufreq.read(cpufreq.policy_dirs(tmp_path / "none")) is None
