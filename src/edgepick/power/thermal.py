"""Every temperature sensor the kernel exposes: thermal zones (`/sys/class/thermal/
thermal_zone*/{type,temp}`) and hwmon sensors (`/sys/class/hwmon/hwmon*/temp*_input`, named by
`name` and `temp*_label`), in millidegrees Celsius. VMs and containers usually expose none."""

from __future__ import annotations

from pathlib import Path

from edgepick.power.base import read_int, read_text


def sensor_files(root: Path | str = "/") -> dict[str, Path]:
    """sensor name -> the file holding its temperature."""
    root = Path(root)
    out: dict[str, Path] = {}
    for zone in sorted((root / "sys/class/thermal").glob("thermal_zone*")):
        if (zone / "temp").exists():
            out[f"{read_text(zone / 'type') or zone.name} ({zone.name})"] = zone / "temp"
    for hw in sorted((root / "sys/class/hwmon").glob("hwmon*")):
        chip = read_text(hw / "name") or hw.name
        for f in sorted(hw.glob("temp*_input")):
            label = read_text(hw / f.name.replace("_input", "_label")) or f.name[:-6]
            out[f"{chip}/{label} ({hw.name})"] = f
    return out


def read_all(files: dict[str, Path]) -> dict[str, float]:
    """name -> °C for the sensors readable now, implausible values dropped."""
    out = {}
    for name, f in files.items():
        milli = read_int(f)
        if milli is not None and -40 < milli / 1000 < 150:
            out[name] = round(milli / 1000, 1)
    return out


def hottest(temps: dict[str, float]) -> tuple[str, float] | None:
    return max(temps.items(), key=lambda kv: kv[1]) if temps else None
