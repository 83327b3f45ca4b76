"""CPU frequency against its cap (`/sys/devices/system/cpu/cpu*/cpufreq/`, kHz): a thermal cap
shows as `scaling_max_freq` lowered below `cpuinfo_max_freq`, or the current frequency falling
under load. VMs usually expose none."""

from __future__ import annotations

from pathlib import Path

from edgepick.power.base import read_int


def policy_dirs(root: Path | str = "/") -> list[Path]:
    return sorted(p for p in (Path(root) / "sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq")
                  if (p / "scaling_cur_freq").exists())


def read(dirs: list[Path]) -> dict | None:
    """Mean current frequency and the lowest cap as a share of the hardware maximum."""
    cur, cap = [], []
    for d in dirs:
        c, hw = read_int(d / "scaling_cur_freq"), read_int(d / "cpuinfo_max_freq")
        mx = read_int(d / "scaling_max_freq") or hw
        if c and hw:
            cur.append(c / hw)
            cap.append((mx or hw) / hw)
    if not cur:
        return None
    return {"cur_share": round(sum(cur) / len(cur), 3), "cap_share": round(min(cap), 3)}
