"""Linux powercap RAPL (Documentation/power/powercap/powercap.rst): package and DRAM energy.

Each zone `intel-rapl:N` (name `package-N`) and its DRAM subzone (name `dram`) has a cumulative
`energy_uj` that wraps to 0 after `max_energy_range_uj`. The package zone includes its own
`core`/`uncore` subzones, so those are not added again. RAPL covers the CPU package and DRAM,
not the rest of the board (disk, fans, regulators' losses). Since Linux 5.10 `energy_uj` is
readable by root only; that is said, not taken for "no counter".
"""

from __future__ import annotations

from pathlib import Path

from edgepick.power.base import PowerReading, PowerSource, SourceError, now, read_int, read_text

ROOT = "sys/class/powercap"


def _zones(root: Path) -> list[Path]:
    base = root / ROOT
    if not base.is_dir():
        return []
    out = []
    for zone in sorted(base.glob("intel-rapl:*")):
        name = read_text(zone / "name") or ""
        if name.startswith("package") or name == "dram":
            out.append(zone)
    return out


class RaplSource(PowerSource):
    name = "rapl"
    kind = "energy"
    covers = "CPU package + DRAM, not the board"
    stale_after_s = 2.0

    def __init__(self, zones: list[Path]):
        self.zones = zones
        self._last: dict[Path, int] = {}
        self._total_uj = 0

    def paths(self) -> list[str]:
        return [str(z / "energy_uj") for z in self.zones]

    def read(self) -> PowerReading:
        raws = []
        for zone in self.zones:
            value = read_int(zone / "energy_uj")
            if value is None:
                raise SourceError(f"{zone / 'energy_uj'}: not readable")
            last = self._last.get(zone)
            if last is not None:
                delta = value - last
                if delta < 0:  # wrapped: the counter restarts at 0 after max_energy_range_uj
                    span = read_int(zone / "max_energy_range_uj")
                    if not span:
                        raise SourceError(f"{zone}: counter went back without max_energy_range_uj")
                    delta += span
                self._total_uj += delta
            self._last[zone] = value
            raws.append(value)
        return PowerReading(t=now(), energy_j=self._total_uj / 1e6, raw=tuple(raws))


def find(root: Path) -> tuple[RaplSource | None, str | None]:
    """The source, or None with why (absent, or present but unreadable)."""
    zones = _zones(root)
    if not zones:
        return None, None
    unreadable = [z for z in zones if read_int(z / "energy_uj") is None]
    if unreadable:
        return None, (f"RAPL present but {unreadable[0] / 'energy_uj'} is not readable "
                      "(root only since Linux 5.10)")
    return RaplSource(zones), None


find.rank = 1  # among edgepick's own sources: the CPU package's own energy counter
