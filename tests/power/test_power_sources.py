"""Each power reader on a fixture tree laid out like the real sysfs: counter wrap-around, a
missing file, AC connected, a counter that stops updating."""

from __future__ import annotations

import os
import stat
import sys

import pytest

import power_sysfs as fx
from edgepick.power import NO_SOURCE, PowerConfig, SourceError, detect, find_sources
from edgepick.power.base import PowerReading
from edgepick.power.battery import BatterySource
from edgepick.power.battery import find as find_battery
from edgepick.power.command import CommandSource, parse
from edgepick.power.energy import EnergyCurve
from edgepick.power.ina3221 import find as find_ina
from edgepick.power.rapl import find as find_rapl


def test_rapl_adds_package_and_dram_not_core(tmp_path):
    files = fx.rapl(tmp_path)
    src, why = find_rapl(tmp_path)
    assert why is None and src is not None
    assert sorted(os.path.basename(os.path.dirname(p)) for p in src.paths()) == [
        "intel-rapl:0", "intel-rapl:0:2"]
    assert src.read().energy_j == 0.0
    files["package"].write_text("3000000\n")  # +2 J
    files["dram"].write_text("1000000\n")  # +0.5 J
    assert src.read().energy_j == pytest.approx(2.5)


def test_rapl_wraps_by_max_energy_range(tmp_path):
    files = fx.rapl(tmp_path, package_uj=999_000, max_uj=1_000_000)
    src, _ = find_rapl(tmp_path)
    src.read()
    files["package"].write_text("1000\n")  # wrapped: 1000 µJ to the top, 1000 µJ after 0
    assert src.read().energy_j == pytest.approx(0.002)


def test_rapl_missing_file_is_an_error_not_zero(tmp_path):
    files = fx.rapl(tmp_path)
    src, _ = find_rapl(tmp_path)
    src.read()
    files["dram"].unlink()
    with pytest.raises(SourceError, match="energy_uj"):
        src.read()


def test_rapl_root_only_counter_is_said(tmp_path):
    files = fx.rapl(tmp_path)
    if os.geteuid() == 0:  # root reads a mode-0 file anyway: make the read fail another way
        files["package"].unlink()
        files["package"].mkdir()
    else:
        files["package"].chmod(0)
    src, why = find_rapl(tmp_path)
    assert src is None and "not readable" in why and "root" in why


def test_counter_that_stops_updating_is_unmeasured(tmp_path):
    files = fx.rapl(tmp_path)
    src, _ = find_rapl(tmp_path)
    # readings over 10 s with the counter frozen: RAPL updates every ms, so this is a stall
    readings = [PowerReading(t=float(i), energy_j=src.read().energy_j, raw=src.read().raw)
                for i in range(11)]
    curve = EnergyCurve(readings, "energy", src.stale_after_s)
    assert curve.joules(0.0, 10.0) is None
    assert "stopped updating" in curve.problem(0.0, 10.0)
    files["package"].write_text("9000000\n")
    moving = readings[:-1] + [PowerReading(t=10.0, energy_j=src.read().energy_j, raw=(9, 1))]
    assert EnergyCurve(moving, "energy", 2.0).joules(0.0, 10.0) == pytest.approx(8.0)


def test_battery_energy_now_counts_down(tmp_path):
    bat = fx.battery(tmp_path)
    src, why = find_battery(tmp_path)
    assert why is None and src.mode == "energy_now" and src.invalid_reason() is None
    assert src.read().energy_j == 0.0
    (bat / "energy_now").write_text("39999000\n")  # 1000 µWh = 3.6 J drawn
    assert src.read().energy_j == pytest.approx(3.6)


def test_battery_preference_and_power_modes(tmp_path):
    fx.battery(tmp_path, files={"charge_now": 3_000_000, "voltage_now": 3_800_000})
    src, _ = find_battery(tmp_path)
    assert src.mode == "charge_now"
    src.read()
    (tmp_path / "sys/class/power_supply/BAT0/charge_now").write_text("2999000\n")  # 1 mAh
    assert src.read().energy_j == pytest.approx(1e-3 * 3600 * 3.8)
    other = tmp_path / "b"
    fx.battery(other, files={"current_now": -500_000, "voltage_now": 4_000_000})
    src, _ = find_battery(other)
    assert src.mode == "current_now" and src.read().power_w == pytest.approx(2.0)


def test_battery_on_ac_is_refused_and_said(tmp_path):
    fx.battery(tmp_path, ac_online=1, status="Charging")
    src, _ = find_battery(tmp_path)
    assert "on AC power (AC)" in src.invalid_reason()
    source, line = detect(PowerConfig(sysfs_root=str(tmp_path)))
    assert source is None and line.startswith(NO_SOURCE) and "on AC power" in line


def test_battery_missing_file_mid_run(tmp_path):
    bat = fx.battery(tmp_path)
    src, _ = find_battery(tmp_path)
    (bat / "energy_now").unlink()
    with pytest.raises(SourceError, match="energy_now"):
        src.read()


def test_gauge_shorter_than_its_update_period_is_unmeasured():
    readings = [PowerReading(t=i * 0.5, energy_j=0.0, raw=40_000_000) for i in range(7)]
    curve = EnergyCurve(readings, "energy", BatterySource.stale_after_s)
    assert curve.joules(0.0, 3.0) is None
    assert "update period" in curve.problem(0.0, 3.0)


def test_ina3221_hwmon_uses_the_board_input_rail(tmp_path):
    fx.ina3221_hwmon(tmp_path, {"VDD_IN": (5000, 1200), "VDD_CPU_GPU_CV": (5000, 600),
                                "VDD_SOC": (5000, 300)})
    src, why = find_ina(tmp_path)
    assert why is None and src.covers == "board input rail VDD_IN"
    assert src.read().power_w == pytest.approx(6.0)


def test_ina3221_iio_adds_rails_without_an_input_rail(tmp_path):
    d = fx.ina3221_iio(tmp_path, {"GPU": 1500, "CPU": 2500, "SOC": 1000})
    src, _ = find_ina(tmp_path)
    assert src.read().power_w == pytest.approx(5.0)
    (d / "in_power1_input").unlink()
    with pytest.raises(SourceError, match="in_power1_input"):
        src.read()


def test_power_curve_integrates_watts():
    readings = [PowerReading(t=float(i), power_w=2.0 + i, raw=i) for i in range(5)]
    curve = EnergyCurve(readings, "power", 5.0, period_s=1.0)
    assert curve.joules(0.0, 4.0) == pytest.approx(16.0)  # mean 4 W over 4 s
    assert curve.joules(0.0, 9.0) is None  # not covered


@pytest.mark.parametrize("text, kind, value", [
    ("3.2", "power", 3.2), ("power: 3200 mW", "power", 3.2), ("41.5 J\n", "energy", 41.5),
    ("noise\n12 mWh", "energy", 43.2)])
def test_command_output_parsed(text, kind, value):
    k, v = parse(text)
    assert k == kind and v == pytest.approx(value)


def test_command_bad_output_is_one_line():
    with pytest.raises(SourceError, match="expected watts or joules"):
        parse("volts: lots")


def test_command_source_runs_the_meter(tmp_path):
    meter = tmp_path / "meter.py"
    meter.write_text("print('4.5 W')\n")
    src = CommandSource(f"{sys.executable} {meter}")
    assert src.kind == "power" and src.read().power_w == 4.5
    found, line = detect(PowerConfig(command=f"{sys.executable} {meter}",
                                     sysfs_root=str(tmp_path)))
    assert found is not None and line.startswith("command")


def _fake_adb(tmp_path, powered: str) -> str:
    adb = tmp_path / "adb"
    adb.write_text(f"""#!{sys.executable}
import sys
args = sys.argv[1:]
assert args[:3] == ["-s", "R58M", "shell"], args
if args[3] == "dumpsys":
    print("Current Battery Service state:\\n  AC powered: false\\n  USB powered: {powered}\\n"
          "  Wireless powered: false\\n  level: 80")
else:
    print("-412000\\n3950000")
""")
    adb.chmod(adb.stat().st_mode | stat.S_IXUSR)
    return str(adb)


def test_adb_reads_the_phone_gauge_and_refuses_usb_power(tmp_path):
    from edgepick.power.adb import AdbSource

    src = AdbSource("R58M", adb=_fake_adb(tmp_path, "false"))
    assert src.read().power_w == pytest.approx(0.412 * 3.95)
    assert src.invalid_reason() is None
    plugged = AdbSource("R58M", adb=_fake_adb(tmp_path / "..", "true"))
    assert "USB powered" in plugged.invalid_reason()


def test_no_source_is_one_line(tmp_path):
    source, line = detect(PowerConfig(sysfs_root=str(tmp_path)))
    assert source is None and line.startswith(NO_SOURCE) and "\n" not in line
    assert find_sources(PowerConfig(sysfs_root=str(tmp_path))) == []
