"""An Android phone over adb, for a target measured over HTTP (`power: {adb_serial: ...}`).

Reads the phone's fuel gauge through `adb -s SERIAL shell cat` of
`/sys/class/power_supply/battery/{current_now,voltage_now}` (µA, µV; the sign of the current
differs between vendors, so its magnitude is used), and `dumpsys battery` for whether it is
powered by AC, USB or wireless: while powered, the gauge measures charging, not the phone, so the
readings are refused. Measure over Wi-Fi adb (`adb tcpip`) with the cable out.
"""

from __future__ import annotations

import shutil
import subprocess

from edgepick.launch.process import run_child
from edgepick.power.base import PowerReading, PowerSource, SourceError, now

BATTERY = "/sys/class/power_supply/battery"


class AdbSource(PowerSource):
    name = "adb"
    covers = "the whole phone, from its battery (unplugged only)"
    stale_after_s = 60.0

    def __init__(self, serial: str, adb: str = "adb", timeout_s: float = 10.0):
        self.serial, self.adb, self.timeout_s = serial, adb, timeout_s

    def _shell(self, *cmd: str) -> str:
        try:
            out = run_child([self.adb, "-s", self.serial, "shell", *cmd], timeout_s=self.timeout_s)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SourceError(f"adb {self.serial}: {exc}") from None
        if out.returncode != 0:
            err = (out.stderr.strip().splitlines() or [""])[-1][:80]
            raise SourceError(f"adb {self.serial}: exited {out.returncode}: {err}")
        return out.stdout

    def paths(self) -> list[str]:
        return [f"adb -s {self.serial}: {BATTERY}/current_now, voltage_now"]

    def invalid_reason(self) -> str | None:
        powered = [line.split(":")[0].strip() for line in self._shell("dumpsys", "battery").splitlines()
                   if line.strip().endswith(": true") and "powered" in line]
        return None if not powered else (f"phone {self.serial} is {powered[0]}: its gauge measures "
                                         "charging, not the phone; unplug (adb over Wi-Fi)")

    def read(self) -> PowerReading:
        out = self._shell("cat", f"{BATTERY}/current_now", f"{BATTERY}/voltage_now").split()
        try:
            ua, uv = int(out[0]), int(out[1])
        except (IndexError, ValueError):
            raise SourceError(f"adb {self.serial}: expected current_now and voltage_now, "
                              f"got {' '.join(out)[:60]!r}") from None
        return PowerReading(t=now(), power_w=abs(ua) * uv / 1e12, raw=(ua, uv))


def find(serial: str | None, adb: str = "adb") -> tuple[AdbSource | None, str | None]:
    if not serial:
        return None, None
    if shutil.which(adb) is None:
        return None, f"adb serial {serial} named but no adb on PATH"
    src = AdbSource(serial, adb)
    try:
        src.read()
    except SourceError as exc:
        return None, str(exc)
    return src, None
