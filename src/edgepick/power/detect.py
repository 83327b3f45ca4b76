"""Which power counter this machine has: an explicit meter or adb serial first, then the sources
other packages register, then RAPL, Jetson INA3221 rails, a battery fuel gauge. None found is
said in one line (`NO_SOURCE`).

A power source is a finder, `find(root: Path) -> (PowerSource | None, why | None)`: the source
when present (usable or not), else None with why it cannot be read, or (None, None) when there
is no such counter here. edgepick's own and any other package's are registered alike, in the
entry point group `edgepick.power_sources` (edgepick/plugins.py); an installed source comes
before the built-in sysfs counters, since whoever installed it chose that meter."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from edgepick.errors import EdgepickError
from edgepick.plugins import Plugins
from edgepick.power import adb
from edgepick.power.base import PowerSource, SourceError
from edgepick.power.command import CommandSource

NO_SOURCE = "no power counter here"


def _callable(name: str, obj, where: str):
    if not callable(obj):
        raise SourceError(f"power source '{name}' ({where}) is not a finder find(root)")
    return obj


SOURCES = Plugins("edgepick.power_sources", "power source", check=_callable)


def _finders() -> list[tuple[str, object]]:
    """(name, finder): the other packages' sources by name, then edgepick's own in the order
    their finders' `rank` gives (a counter that covers more of the board first)."""
    found = [(n, _loaded(n)) for n in SOURCES.names()]
    return sorted(found, key=lambda nf: (SOURCES.is_own(nf[0]), getattr(nf[1], "rank", 0), nf[0]))


def _loaded(name: str):
    """The finder, or one that reports why it could not be loaded: a broken plugin is a line in
    probe's list, never a failed bench."""
    try:
        return SOURCES.load(name)
    except (EdgepickError, SourceError) as exc:
        message = str(exc)
        return lambda root: (None, message)


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
        try:
            out.append(Found("command", CommandSource(cfg.command), None))
        except SourceError as exc:
            out.append(Found("command", None, str(exc)))
    src, why = adb.find(cfg.adb_serial)
    if src is not None or why:
        out.append(Found("adb", src, why))
    for name, finder in _finders():
        try:
            src, why = finder(root)
        except Exception as exc:  # a plugin's bug is a line in probe's list, not a failed bench
            src, why = None, f"failed: {type(exc).__name__}: {exc}"
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
