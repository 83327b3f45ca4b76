"""Battery fuel gauge (ABI sysfs-class-power): valid only off AC, which is detected and said.

Per supply of type Battery, in order of preference: `energy_now` (µWh, a counter that falls as
the battery drains), `charge_now` (µAh) × `voltage_now` (µV), `power_now` (µW), `current_now`
(µA) × `voltage_now`. Gauges update every few seconds and some report a negative current while
discharging (the magnitude is used). On AC, or charging, the gauge measures the charger's work
on the battery, not the device: the readings are refused with that reason.
"""

from __future__ import annotations

from pathlib import Path

from edgepick.power.base import PowerReading, PowerSource, SourceError, now, read_int, read_text

ROOT = "sys/class/power_supply"
UWH_TO_J = 3.6e-3  # 1 µWh = 3.6 mJ


def _supplies(root: Path) -> list[Path]:
    base = root / ROOT
    return sorted(p for p in base.iterdir()) if base.is_dir() else []


def on_ac(root: Path) -> str | None:
    """The name of an external supply that is online (Mains, USB), or of a charging battery."""
    for dev in _supplies(root):
        kind = read_text(dev / "type")
        if kind in ("Mains", "USB", "USB_C", "USB_PD", "Wireless") and read_text(dev / "online") == "1":
            return dev.name
        if kind == "Battery" and read_text(dev / "status") in ("Charging", "Full"):
            return f"{dev.name} ({read_text(dev / 'status').lower()})"
    return None


def has_supplies(root: Path) -> bool:
    """Does the kernel list any power supply (else being on AC is unknown, not false)?"""
    return bool(_supplies(root))


def percent(root: Path) -> float | None:
    """The first battery's charge in percent (`capacity`), or None without one."""
    for dev in _supplies(root):
        if read_text(dev / "type") == "Battery":
            cap = read_int(dev / "capacity")
            if cap is not None:
                return float(cap)
    return None


class BatterySource(PowerSource):
    name = "battery"
    covers = "the whole device, from the battery (off AC only)"
    stale_after_s = 60.0  # gauges update every few seconds, some every 30 s or more

    def __init__(self, root: Path, dev: Path, mode: str):
        self.root, self.dev, self.mode = root, dev, mode
        self.kind = "energy" if mode in ("energy_now", "charge_now") else "power"
        self._start: float | None = None
        self._last_charge: int | None = None
        self._charge_j = 0.0

    def paths(self) -> list[str]:
        files = {"energy_now": ["energy_now"], "charge_now": ["charge_now", "voltage_now"],
                 "power_now": ["power_now"], "current_now": ["current_now", "voltage_now"]}
        return [str(self.dev / f) for f in files[self.mode]]

    def invalid_reason(self) -> str | None:
        ac = on_ac(self.root)
        return None if ac is None else (f"on AC power ({ac}): the fuel gauge measures the charger, "
                                        "not the device; unplug to measure")

    def _int(self, name: str) -> int:
        v = read_int(self.dev / name)
        if v is None:
            raise SourceError(f"{self.dev / name}: missing or unreadable")
        return v

    def read(self) -> PowerReading:
        if self.mode == "energy_now":
            uwh = self._int("energy_now")
            if self._start is None:
                self._start = uwh
            return PowerReading(t=now(), energy_j=(self._start - uwh) * UWH_TO_J, raw=uwh)
        if self.mode == "charge_now":
            uah, uv = self._int("charge_now"), self._int("voltage_now")
            if self._last_charge is not None:  # charge drawn × the voltage it was drawn at
                self._charge_j += (self._last_charge - uah) * 1e-6 * 3600 * uv * 1e-6
            self._last_charge = uah
            return PowerReading(t=now(), energy_j=self._charge_j, raw=uah)
        if self.mode == "power_now":
            uw = self._int("power_now")
            return PowerReading(t=now(), power_w=abs(uw) / 1e6, raw=uw)
        ua, uv = self._int("current_now"), self._int("voltage_now")
        return PowerReading(t=now(), power_w=abs(ua) * uv / 1e12, raw=(ua, uv))


def find(root: Path) -> tuple[BatterySource | None, str | None]:
    for dev in _supplies(root):
        if read_text(dev / "type") != "Battery":
            continue
        for mode, need in (("energy_now", ["energy_now"]),
                           ("charge_now", ["charge_now", "voltage_now"]),
                           ("power_now", ["power_now"]),
                           ("current_now", ["current_now", "voltage_now"])):
            if all(read_int(dev / f) is not None for f in need):
                return BatterySource(root, dev, mode), None
        return None, f"battery {dev.name} exposes no energy, charge, power or current reading"
    return None, None


find.rank = 3  # among edgepick's own sources: a fuel gauge, coarse and slow to update
