"""Fixture trees laid out like the kernel's sysfs interfaces, from their documentation:
Documentation/power/powercap/powercap.rst (RAPL), ABI testing/sysfs-class-power (fuel gauges),
Documentation/hwmon/ina3221.rst and L4T's ina3221x iio driver (Jetson rails)."""

from __future__ import annotations

from pathlib import Path


def write(root: Path, rel: str, value) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"{value}\n")
    return p


def rapl(root: Path, package_uj: int = 1_000_000, dram_uj: int = 500_000,
         max_uj: int = 262_143_328_850) -> dict[str, Path]:
    base = "sys/class/powercap"
    write(root, f"{base}/intel-rapl/enabled", 1)
    pkg = f"{base}/intel-rapl:0"
    write(root, f"{pkg}/name", "package-0")
    write(root, f"{pkg}/max_energy_range_uj", max_uj)
    write(root, f"{pkg}/constraint_0_name", "long_term")
    for i, name in ((0, "core"), (1, "uncore")):
        write(root, f"{pkg}/intel-rapl:0:{i}/name", name)
        write(root, f"{pkg}/intel-rapl:0:{i}/energy_uj", 123)
    # the flat view the kernel also exposes under /sys/class/powercap
    write(root, f"{base}/intel-rapl:0:0/name", "core")
    write(root, f"{base}/intel-rapl:0:0/energy_uj", 123)
    write(root, f"{base}/intel-rapl:0:2/name", "dram")
    write(root, f"{base}/intel-rapl:0:2/max_energy_range_uj", max_uj)
    return {"package": write(root, f"{pkg}/energy_uj", package_uj),
            "dram": write(root, f"{base}/intel-rapl:0:2/energy_uj", dram_uj)}


def battery(root: Path, *, ac_online: int = 0, status: str = "Discharging",
            files: dict | None = None) -> Path:
    ps = "sys/class/power_supply"
    write(root, f"{ps}/AC/type", "Mains")
    write(root, f"{ps}/AC/online", ac_online)
    bat = f"{ps}/BAT0"
    write(root, f"{bat}/type", "Battery")
    write(root, f"{bat}/status", status)
    write(root, f"{bat}/capacity", 80)
    for k, v in (files if files is not None else {"energy_now": 40_000_000,
                                                  "voltage_now": 11_400_000}).items():
        write(root, f"{bat}/{k}", v)
    return root / bat


def ina3221_hwmon(root: Path, rails: dict[str, tuple[int, int]]) -> Path:
    """rails: label -> (bus mV, mA) on channels 1, 2, 3."""
    hw = root / "sys/class/hwmon/hwmon3"
    write(root, "sys/class/hwmon/hwmon3/name", "ina3221")
    for ch, (label, (mv, ma)) in enumerate(rails.items(), start=1):
        write(hw, f"in{ch}_label", label)
        write(hw, f"in{ch}_input", mv)
        write(hw, f"curr{ch}_input", ma)
        write(hw, f"in{ch}_enable", 1)
        write(hw, f"shunt{ch}_resistor", 5000)
    return hw


def ina3221_iio(root: Path, rails: dict[str, int]) -> Path:
    """rails: rail name -> mW, L4T's /sys/bus/i2c/drivers/ina3221x/1-0040/iio:device0."""
    d = root / "sys/bus/i2c/drivers/ina3221x/1-0040/iio:device0"
    for ch, (name, mw) in enumerate(rails.items()):
        write(d, f"rail_name_{ch}", name)
        write(d, f"in_power{ch}_input", mw)
        write(d, f"in_voltage{ch}_input", 5000)
    return d


def thermal(root: Path, zones: dict[str, int], hwmon: dict[str, int] | None = None) -> None:
    for i, (kind, milli) in enumerate(zones.items()):
        write(root, f"sys/class/thermal/thermal_zone{i}/type", kind)
        write(root, f"sys/class/thermal/thermal_zone{i}/temp", milli)
    for i, (label, milli) in enumerate((hwmon or {}).items(), start=1):
        write(root, "sys/class/hwmon/hwmon0/name", "coretemp")
        write(root, f"sys/class/hwmon/hwmon0/temp{i}_label", label)
        write(root, f"sys/class/hwmon/hwmon0/temp{i}_input", milli)


def cpufreq(root: Path, cur_khz: int, max_khz: int = 3_000_000, cap_khz: int | None = None,
            cpus: int = 2) -> None:
    for c in range(cpus):
        d = f"sys/devices/system/cpu/cpu{c}/cpufreq"
        write(root, f"{d}/scaling_cur_freq", cur_khz)
        write(root, f"{d}/cpuinfo_max_freq", max_khz)
        write(root, f"{d}/scaling_max_freq", cap_khz or max_khz)
