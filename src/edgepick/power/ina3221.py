"""NVIDIA Jetson INA3221 power rails (Documentation/hwmon/ina3221.rst, and L4T's iio driver).

Two layouts exist:
- hwmon (mainline): `/sys/class/hwmon/hwmonN/` with `name` = ina3221, `in[1-3]_input` bus
  voltage (mV), `curr[1-3]_input` current (mA), `in[1-3]_label` the rail name;
- iio (older L4T, driver ina3221x): `/sys/bus/i2c/drivers/ina3221x/*/iio:device*/` with
  `in_power[0-2]_input` (mW) and `rail_name_[0-2]`.
A rail named like the board's input (`VDD_IN`, `POM_5V_IN`) already includes the others, so
when one exists it is used alone; otherwise the rails are added.
"""

from __future__ import annotations

from pathlib import Path

from edgepick.power.base import PowerReading, PowerSource, SourceError, now, read_int, read_text


def _is_input(label: str) -> bool:
    return label.upper().endswith("_IN") or label.upper() == "IN"


class Rail:
    def __init__(self, label: str, files: list[Path], scale: float):
        self.label, self.files, self.scale = label, files, scale

    def watts(self) -> float:
        values = [read_int(f) for f in self.files]
        if any(v is None for v in values):
            missing = next(f for f, v in zip(self.files, values) if v is None)
            raise SourceError(f"{missing}: missing or unreadable")
        product = 1.0
        for v in values:
            product *= v
        return product * self.scale


class Ina3221Source(PowerSource):
    name = "ina3221"
    covers = "the board's rails"
    stale_after_s = 5.0

    def __init__(self, rails: list[Rail]):
        inputs = [r for r in rails if _is_input(r.label)]
        self.rails = inputs[:1] or rails
        self.covers = (f"board input rail {self.rails[0].label}" if inputs else
                       "rails " + " + ".join(r.label for r in self.rails))

    def paths(self) -> list[str]:
        return [str(f) for r in self.rails for f in r.files]

    def read(self) -> PowerReading:
        watts = sum(r.watts() for r in self.rails)
        return PowerReading(t=now(), power_w=watts, raw=watts)


def _hwmon_rails(root: Path) -> list[Rail]:
    rails = []
    dirs = sorted((root / "sys/class/hwmon").glob("hwmon*"))
    dirs += sorted((root / "sys/bus/i2c/drivers").glob("ina3221*/*/hwmon/hwmon*"))
    seen: set[str] = set()
    for d in dirs:
        if read_text(d / "name") != "ina3221" or d.resolve() in seen:
            continue
        seen.add(str(d.resolve()))
        for ch in (1, 2, 3):
            volt, curr = d / f"in{ch}_input", d / f"curr{ch}_input"
            if volt.exists() and curr.exists() and read_text(d / f"in{ch}_enable") != "0":
                label = read_text(d / f"in{ch}_label") or f"{d.name}/ch{ch}"
                rails.append(Rail(label, [volt, curr], 1e-6))  # mV × mA = µW
    return rails


def _iio_rails(root: Path) -> list[Rail]:
    rails = []
    for d in sorted((root / "sys/bus/i2c/drivers").glob("ina3221*/*/iio:device*")):
        for f in sorted(d.glob("in_power*_input")):
            ch = f.name.removeprefix("in_power").removesuffix("_input")
            label = read_text(d / f"rail_name_{ch}") or f"{d.parent.name}/ch{ch}"
            rails.append(Rail(label, [f], 1e-3))  # mW
    return rails


def find(root: Path) -> tuple[Ina3221Source | None, str | None]:
    rails = _hwmon_rails(root) or _iio_rails(root)
    if not rails:
        return None, None
    readable = [r for r in rails if all(read_int(f) is not None for f in r.files)]
    if not readable:
        return None, f"INA3221 present but {rails[0].files[0]} is not readable"
    return Ina3221Source(readable), None


find.rank = 2  # among edgepick's own sources: a Jetson's board rails
