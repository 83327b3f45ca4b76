"""Energy over an interval from a source's readings (docs/metrics.md, "Energy").

A counter's cumulative joules are interpolated linearly at both ends of the interval; an
instantaneous power is integrated by the trapezoid rule. An interval is measured only when the
readings cover it and the counter moved during it: a counter that stopped updating, or an
interval shorter than the gauge's update period, is *unmeasured* (None), never 0 J.
"""

from __future__ import annotations

from bisect import bisect_left

from edgepick.power.base import PowerReading


class EnergyCurve:
    def __init__(self, readings: list[PowerReading], kind: str, stale_after_s: float,
                 period_s: float = 0.5):
        self.readings = sorted(readings, key=lambda r: r.t)
        self.kind, self.stale_after_s, self.period_s = kind, stale_after_s, period_s
        self.t = [r.t for r in self.readings]
        self.cum = self._cumulative()

    def _cumulative(self) -> list[float]:
        if self.kind == "energy":
            return [r.energy_j or 0.0 for r in self.readings]
        out, total = [], 0.0
        for i, r in enumerate(self.readings):
            if i:
                prev = self.readings[i - 1]
                total += (r.t - prev.t) * ((prev.power_w or 0.0) + (r.power_w or 0.0)) / 2
            out.append(total)
        return out

    def at(self, t: float) -> float:
        i = bisect_left(self.t, t)
        if i <= 0:
            return self.cum[0]
        if i >= len(self.t):
            return self.cum[-1]
        t0, t1 = self.t[i - 1], self.t[i]
        f = 0.0 if t1 == t0 else (t - t0) / (t1 - t0)
        return self.cum[i - 1] + f * (self.cum[i] - self.cum[i - 1])

    def problem(self, t0: float, t1: float) -> str | None:
        """Why the interval cannot be measured, or None."""
        if len(self.t) < 2:
            return "fewer than two power readings"
        slack = self.period_s * 1.5 + 0.05
        if self.t[0] > t0 + slack or self.t[-1] < t1 - slack:
            return "power readings do not cover the measurement"
        raws = [r.raw for r in self.readings if t0 - slack <= r.t <= t1 + slack]
        if len(set(map(repr, raws))) <= 1:
            if t1 - t0 > self.stale_after_s:
                return f"the power counter stopped updating (unchanged for {t1 - t0:.0f} s)"
            if self.kind == "energy":  # a steady meter may print the same watts; a counter moves
                return (f"shorter than the counter's update period (unchanged over "
                        f"{t1 - t0:.1f} s; it updates about every {self.stale_after_s:g} s)")
        return None

    def joules(self, t0: float, t1: float) -> float | None:
        if t1 <= t0 or self.problem(t0, t1):
            return None
        return self.at(t1) - self.at(t0)

    def watts(self, t0: float, t1: float) -> float | None:
        j = self.joules(t0, t1)
        return None if j is None else j / (t1 - t0)

    def intervals_joules(self, spans: list[tuple[float, float]]) -> float | None:
        """Energy over many short spans (each prefill): the curve must be valid over the whole
        stretch they lie in; each span is then read off the interpolated curve."""
        if not spans:
            return None
        lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
        if hi <= lo or self.problem(lo, hi):
            return None
        return sum(self.at(b) - self.at(a) for a, b in spans)
