"""What bench does around each worker, from the parent process: wait (within the plan's bound)
for a quiet host, read idle power, then sample host load, power, temperatures and CPU
frequency while the worker measures (seed 000 §5.2; docs/metrics.md)."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from edgepick.bench import hostload
from edgepick.bench.energy import energy_figures, run_spans
from edgepick.bench.sustained import complete
from edgepick.power import cpufreq, thermal
from edgepick.power.detect import PowerConfig, detect
from edgepick.power.energy import EnergyCurve
from edgepick.power.sampler import Sampler
from edgepick.records.bench import EnergyFigures, HostLoad, LoadFigures, SustainReport

QUIET_WINDOW_S = 0.5

_detected: dict[str, tuple] = {}


def power_source(cfg: PowerConfig):
    """The power source for this configuration, detected once per process and config."""
    key = cfg.model_dump_json()
    if key not in _detected:
        _detected[key] = detect(cfg)
    return _detected[key]


class Session:
    def __init__(self, req) -> None:
        self.req = req
        cfg: PowerConfig = req.power
        self.source, self.source_line = power_source(cfg)
        self.own = hostload.OwnTree()
        probes = {"load": lambda: hostload.snapshot(self.own)}
        files = thermal.sensor_files(cfg.sysfs_root)
        if files:
            probes["temps"] = lambda: thermal.read_all(files)
        dirs = cpufreq.policy_dirs(cfg.sysfs_root)
        if dirs:
            probes["freq"] = lambda: cpufreq.read(dirs)
        if self.source is not None:
            probes["power"] = self.source.read
        self.sampler = Sampler(probes, cfg.period_s)
        self.quiet: dict = {}
        self.idle_span: tuple[float, float] | None = None
        self.invalid: str | None = None

    def start(self) -> None:
        self.sampler.__enter__()
        self.quiet = hostload.wait_quiet(
            self.req.quiet_wait_s, self.req.contended_share, QUIET_WINDOW_S,
            read=lambda: hostload.snapshot(self.own),
            pause=lambda: threading.Event().wait(QUIET_WINDOW_S))
        if self.source is not None:
            a = time.monotonic()
            threading.Event().wait(self.req.power.idle_s)
            self.idle_span = (a, time.monotonic())

    def stop(self) -> None:
        self.sampler.stop()
        if self.source is not None:
            try:
                self.invalid = self.source.invalid_reason()
            except Exception as exc:  # the source vanished: its readings cannot be trusted
                self.invalid = str(exc)

    # figures ---------------------------------------------------------------------------------

    def _region(self, raw: dict | None) -> tuple[float, float] | None:
        prefill, _, decode, _ = run_spans(raw or {})
        spans = prefill + decode
        if raw and raw.get("t0") is not None and raw.get("duration_s"):
            spans.append((raw["t0"], raw["t0"] + raw["duration_s"]))
        if not spans:
            return None
        return min(a for a, _ in spans), max(b for _, b in spans)

    def host_load(self, raw: dict | None) -> HostLoad:
        loads = self.sampler.series("load")
        region = self._region(raw)
        if region is not None:
            before = [s for t, s in loads if t <= region[0]]
            after = [s for t, s in loads if t >= region[1]]
            inside = [s for t, s in loads if region[0] <= t <= region[1]]
            a = before[-1] if before else (inside[0] if inside else None)
            b = after[0] if after else (inside[-1] if inside else None)
        else:
            start = self.idle_span[1] if self.idle_span else None
            usable = [s for t, s in loads if start is None or t >= start]
            a, b, inside = (usable[0], usable[-1], usable) if usable else (None, None, [])
        during = {}
        if a is not None and b is not None and b.t > a.t:
            during = hostload.load_between(a, b, queue=[s.run_queue for s in inside] or None)
        pre = self.quiet.get("load")
        return HostLoad(**during, before=LoadFigures(**pre) if pre else None,
                        waited_s=self.quiet.get("waited_s", 0.0),
                        quiet_before=self.quiet.get("quiet"),
                        contended_share=self.req.contended_share)

    def curve(self) -> EnergyCurve | None:
        if self.source is None or self.invalid or "power" in self.sampler.errors:
            return None
        return EnergyCurve([r for _, r in self.sampler.series("power")], self.source.kind,
                           self.source.stale_after_s, self.req.power.period_s)

    def energy(self, raw: dict | None) -> EnergyFigures:
        if self.source is None:
            return EnergyFigures(note=self.source_line)
        note = self.invalid or self.sampler.errors.get("power")
        return energy_figures(self.curve(), self.source.describe(), note, self.idle_span, raw)

    def figures(self, raw: dict | None) -> dict:
        load = self.host_load(raw)
        contended = hostload.is_contended(load.model_dump(), self.req.contended_share)
        return {"energy": self.energy(raw), "host_load": load, "contended": contended}

    def complete_sustain(self, report: SustainReport, raw: dict, threshold: float) -> SustainReport:
        return complete(report, raw, self.sampler.samples, self.curve(), threshold)


@contextmanager
def open_session(req):
    session = Session(req)
    session.start()
    try:
        yield session
    finally:
        session.stop()
