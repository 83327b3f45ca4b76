"""Power and temperature read at scrape time, for serve's /metrics gauges
(`edgepick_power_watts`, `edgepick_temperature_celsius`)."""

from __future__ import annotations

from edgepick.power.base import PowerSource, SourceError
from edgepick.power.detect import PowerConfig, detect
from edgepick.power.thermal import read_all, sensor_files


class LiveWatts:
    """Watts now: an instantaneous source as read; a counter as the mean since the previous
    scrape (the first scrape after start covers the time since the server started)."""

    def __init__(self, source: PowerSource):
        self.source = source
        self.last = source.read()

    def __call__(self) -> float:
        try:
            r = self.source.read()
        except SourceError:
            return float("nan")  # a scrape shows the gap; nothing is made up
        if r.power_w is not None:
            return r.power_w
        prev, self.last = self.last, r
        dt = r.t - prev.t
        return float("nan") if dt <= 0 else ((r.energy_j or 0.0) - (prev.energy_j or 0.0)) / dt


def live_sources(root: str = "/"):
    """(watts reader or None, {sensor: reader}, the source's one-line description or why there
    is none) for what this device exposes."""
    source, line = detect(PowerConfig(sysfs_root=root))
    watts = None
    if source is not None:
        try:
            watts = LiveWatts(source)
        except SourceError:
            watts = None
    files = sensor_files(root)
    temps = {name: (lambda f={name: path}: read_all(f).get(next(iter(f)), float("nan")))
             for name, path in files.items()}
    return watts, temps, line
