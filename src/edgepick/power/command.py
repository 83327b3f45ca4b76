"""An external meter through a command (`power: {command: "..."}`): USB power meters, lab
analyzers. The command is run once per sample and prints one number on its last line: watts
(`3.2`, `3.2 W`, `3200 mW`) or a cumulative energy (`41.7 J`, `12 mWh`), whose first reading
is taken as zero."""

from __future__ import annotations

import re
import shlex
import subprocess

from edgepick.launch.process import run_child
from edgepick.power.base import PowerReading, PowerSource, SourceError, now

_NUMBER = re.compile(r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zA-Z]*)\s*$")
_POWER = {"": 1.0, "w": 1.0, "mw": 1e-3, "uw": 1e-6, "kw": 1e3}
_ENERGY = {"j": 1.0, "mj": 1e-3, "kj": 1e3, "wh": 3600.0, "mwh": 3.6, "uwh": 3.6e-3}


def parse(text: str) -> tuple[str, float]:
    """("power", watts) or ("energy", joules) from the last non-empty line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    m = _NUMBER.search(lines[-1]) if lines else None
    unit = m.group(2).lower() if m else None
    if m is None or (unit not in _POWER and unit not in _ENERGY):
        shown = lines[-1][:60] if lines else "nothing"
        raise SourceError(f"expected watts or joules on the last line (e.g. '3.2 W', '41 J'), "
                          f"got {shown!r}")
    value = float(m.group(1))
    return ("power", value * _POWER[unit]) if unit in _POWER else ("energy", value * _ENERGY[unit])


class CommandSource(PowerSource):
    name = "command"
    stale_after_s = 30.0

    def __init__(self, command: str, timeout_s: float = 5.0):
        self.command, self.timeout_s = command, timeout_s
        self.covers = "what the external meter measures"
        self._first: float | None = None
        self.kind = self._probe_kind()

    def _run(self) -> tuple[str, float]:
        try:
            out = run_child(shlex.split(self.command), timeout_s=self.timeout_s)
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            raise SourceError(f"power command {self.command!r}: {exc}") from None
        if out.returncode != 0:
            err = (out.stderr.strip().splitlines() or [""])[-1][:80]
            raise SourceError(f"power command {self.command!r} exited {out.returncode}: {err}")
        return parse(out.stdout)

    def _probe_kind(self) -> str:
        kind, value = self._run()
        if kind == "energy":
            self._first = value
        return kind

    def paths(self) -> list[str]:
        return [self.command]

    def read(self) -> PowerReading:
        kind, value = self._run()
        if kind != self.kind:
            raise SourceError(f"power command switched from {self.kind} to {kind}")
        if kind == "power":
            return PowerReading(t=now(), power_w=value, raw=value)
        if self._first is None:
            self._first = value
        return PowerReading(t=now(), energy_j=value - self._first, raw=value)
