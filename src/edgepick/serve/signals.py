"""Device signals that hot swap decides on (seed 000 §4.3): battery %, on AC, temperature and
memory pressure, read from the OS where Linux exposes them, or from a signals file (YAML or JSON)
on devices and in tests without them."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

POWER = Path("/sys/class/power_supply")
THERMAL = Path("/sys/class/thermal")
PSI_MEMORY = Path("/proc/pressure/memory")


class Signals(BaseModel):
    model_config = ConfigDict(extra="forbid")

    battery_percent: float | None = None
    on_ac: bool | None = None
    temperature_c: float | None = None  # the hottest thermal zone
    memory_pressure: float | None = None  # PSI "some" avg10: % of time tasks stalled on memory


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def read_os() -> Signals:
    battery = on_ac = None
    if POWER.is_dir():
        for dev in sorted(POWER.iterdir()):
            kind = _read(dev / "type")
            if kind == "Battery" and (cap := _read(dev / "capacity")) not in (None, ""):
                battery = float(cap)
            elif kind in ("Mains", "USB") and (online := _read(dev / "online")) is not None:
                on_ac = bool(on_ac) or online == "1"
    temps = []
    if THERMAL.is_dir():
        for zone in THERMAL.glob("thermal_zone*"):
            raw = _read(zone / "temp")
            if raw and raw.lstrip("-").isdigit():
                temps.append(int(raw) / 1000)
    pressure = None
    psi = _read(PSI_MEMORY)
    if psi:
        for line in psi.splitlines():
            if line.startswith("some"):
                fields = dict(f.split("=") for f in line.split()[1:])
                pressure = float(fields.get("avg10", 0))
    return Signals(battery_percent=battery, on_ac=on_ac,
                   temperature_c=max(temps) if temps else None, memory_pressure=pressure)


def read_file(path: str | Path) -> Signals:
    """A mapping with any of battery_percent, on_ac, temperature_c, memory_pressure."""
    from edgepick.yaml_input import read_yaml_mapping, validate_input

    return validate_input(Signals, read_yaml_mapping(path, "expected a mapping of signals"), path)


def read_signals(path: str | Path | None) -> Signals:
    """The signals file when given, the OS otherwise."""
    return read_file(path) if path else read_os()
