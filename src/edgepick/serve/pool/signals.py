"""Device signals that hot swap decides on (seed 000 §4.3): battery %, on AC, temperature and
memory pressure, read from the OS where Linux exposes them (battery and temperature through
edgepick.power, which every power and thermal reading of edgepick shares), or from a signals file
(YAML or JSON) on devices and in tests without them."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from edgepick.power.battery import has_supplies, on_ac, percent
from edgepick.power.thermal import hottest, read_all, sensor_files
from edgepick.yaml_input import read_yaml_mapping, validate_input

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


def read_os(root: Path = Path("/")) -> Signals:
    """Battery and temperature through edgepick.power (its on-AC rule: mains, USB, USB-C, USB-PD
    and wireless supplies, or a charging battery; every thermal zone and hwmon sensor), and
    the kernel's memory pressure."""
    hot = hottest(read_all(sensor_files(root)))
    return Signals(battery_percent=percent(root),
                   on_ac=on_ac(root) is not None if has_supplies(root) else None,
                   temperature_c=hot[1] if hot else None,
                   memory_pressure=memory_pressure(root / PSI_MEMORY.relative_to("/")))


def memory_pressure(path: Path = PSI_MEMORY) -> float | None:
    """PSI "some" avg10: the share of time (%) tasks stalled on memory."""
    psi = _read(path)
    for line in (psi or "").splitlines():
        if line.startswith("some"):
            fields = dict(f.split("=") for f in line.split()[1:])
            return float(fields.get("avg10", 0))
    return None


def read_file(path: str | Path) -> Signals:
    """A mapping with any of battery_percent, on_ac, temperature_c, memory_pressure."""
    return validate_input(Signals, read_yaml_mapping(path, "expected a mapping of signals"), path)


def read_signals(path: str | Path | None) -> Signals:
    """The signals file when given, the OS otherwise."""
    return read_file(path) if path else read_os()
