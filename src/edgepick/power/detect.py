"""Which power counter this machine has: an explicit meter or adb serial first, then RAPL,
Jetson INA3221 rails, a battery fuel gauge. None found is said in one line (`NO_SOURCE`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from edgepick.power import adb, battery, ina3221, rapl
from edgepick.power.base import PowerSource, SourceError

NO_SOURCE = "no power counter here"


class PowerConfig(BaseModel):
    """`power:` in a plan, or bench's --power-command / --adb-serial."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None  # an external meter printing watts or joules
    adb_serial: str | None = None  # an Android phone measured over HTTP
    period_s: float = Field(0.5, gt=0)  # sampling period
    # Idle power is read this long before each measurement; a fuel gauge that updates every
    # few seconds needs longer than RAPL.
    idle_s: float = Field(2.0, gt=0)
    sysfs_root: str = "/"  # tests point this at a fixture tree


@dataclass
class Found:
    name: str
    source: PowerSource | None
    note: str | None  # why it cannot be used (unreadable, on AC), or None

    def line(self) -> str:
        if self.source is None:
            return f"{self.name}: {self.note}"
        text = self.source.describe()
        return text + (f" — {self.note}" if self.note else "")


def find_sources(cfg: PowerConfig | None = None) -> list[Found]:
    """Every source present, usable or not, in the order detect() prefers them."""
    cfg = cfg or PowerConfig()
    root = Path(cfg.sysfs_root)
    out: list[Found] = []
    if cfg.command:
        from edgepick.power.command import CommandSource

        try:
            out.append(Found("command", CommandSource(cfg.command), None))
        except SourceError as exc:
            out.append(Found("command", None, str(exc)))
    src, why = adb.find(cfg.adb_serial)
    if src is not None or why:
        out.append(Found("adb", src, why))
    for name, finder in (("rapl", rapl.find), ("ina3221", ina3221.find),
                         ("battery", battery.find)):
        src, why = finder(root)
        if src is None and why is None:
            continue
        if src is not None:
            why = _invalid(src)
        out.append(Found(name, src, why))
    return out


def _invalid(src: PowerSource) -> str | None:
    try:
        return src.invalid_reason()
    except SourceError as exc:
        return str(exc)


def detect(cfg: PowerConfig | None = None) -> tuple[PowerSource | None, str]:
    """The preferred usable source and a one-line description, or None and the one line that
    says there is none (with what was found but cannot be used)."""
    found = find_sources(cfg)
    for f in found:
        if f.source is not None and f.note is None:
            return f.source, f.source.describe()
    unusable = "; ".join(f.line() for f in found)
    return None, NO_SOURCE + (f" ({unusable})" if unusable else
                              " (no RAPL, INA3221 rail, battery gauge, adb serial or meter command)")
