"""What every power reader gives: a cumulative energy counter or an instantaneous power, timed.

A counter (RAPL's energy_uj, a fuel gauge's energy_now) integrates exactly between two reads;
an instantaneous power (INA3221 rails, power_now, a meter printing watts) is integrated by the
trapezoid rule over the samples (power/sampler.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path


class SourceError(Exception):
    """A reading failed: a file vanished, a command failed, the device went on AC."""


@dataclass(frozen=True)
class PowerReading:
    t: float  # time.monotonic() when read
    energy_j: float | None = None  # cumulative since the source was opened (counters)
    power_w: float | None = None  # instantaneous (power sources)
    raw: object = None  # the value as read, to notice a counter that stopped updating


class PowerSource:
    """One power counter. `kind` is "energy" (cumulative counter) or "power" (instantaneous)."""

    name = "source"
    kind = "power"
    covers = ""  # what the figure includes, e.g. "CPU package + DRAM, not the board"
    # A reading unchanged for longer than this means the counter stopped (fuel gauges update
    # every few seconds, RAPL every millisecond).
    stale_after_s = 10.0

    def paths(self) -> list[str]:
        return []

    def read(self) -> PowerReading:
        raise NotImplementedError

    def invalid_reason(self) -> str | None:
        """Why the readings do not measure the device right now (e.g. on AC), or None."""
        return None

    def describe(self) -> str:
        where = ", ".join(self.paths())
        return f"{self.name} ({self.covers})" + (f": {where}" if where else "")


def read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    raw = read_text(path)
    try:
        return None if raw is None else int(raw)
    except ValueError:
        return None


def now() -> float:
    return time.monotonic()
