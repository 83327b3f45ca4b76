"""The record one bench configuration produces (docs/bench.md; definitions in docs/metrics.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class MetricStats(BaseModel):
    """A metric over its samples: median with its spread; P99 only where there are enough."""

    median: float
    min: float
    max: float
    p99: float | None = None
    unit: str
    n: int = Field(..., description="number of samples behind the figures")
    # The median's order-statistic interval, each end a one-sided 95% bound valid however the
    # repetitions stopped (bench/median_ci.py); None: not one value per repetition, too few
    # repetitions, or stored before it was computed (decide then uses [min, max]).
    median_low: float | None = None
    median_high: float | None = None


class JudgedLimit(BaseModel):
    """A limit the repetition loop judged, at the look it stopped: the interval and verdict."""

    gate: str  # the scenario constraint, e.g. decode_tps_min
    metric: str
    direction: str
    limit: float
    value: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: str  # pass | fail | undetermined


class Repetitions(BaseModel):
    """How many timed repetitions ran and why they stopped (docs/bench.md)."""

    ran: int
    min: int
    max: int  # equal to min: a fixed count
    stopped: Literal["fixed", "settled", "max"]
    limits: list[JudgedLimit] = Field(default_factory=list)


class MachineState(BaseModel):
    """What the machine was doing around the measurement (seed 000 §3.4: record the state)."""

    load_avg_before: list[float] = Field(default_factory=list)  # 1, 5, 15 min
    load_avg_after: list[float] = Field(default_factory=list)
    temperature_c_before: float | None = None  # hottest readable sensor; None if none readable
    temperature_c_after: float | None = None
    cpu_count: int | None = None
    hostname: str | None = None


class LoadFigures(BaseModel):
    """Host load over an interval (bench/hostload.py): shares of all CPUs."""

    other_cpu_share: float | None = None  # CPU time of processes other than ours
    steal_share: float | None = None  # time a hypervisor gave our CPUs to other guests
    run_queue: float | None = None  # runnable tasks (procs_running), mean of the samples
    interval_s: float | None = None
    cpus: int | None = None


class HostLoad(LoadFigures):
    """During the measurement, plus the window before it (seed 000 §5.2)."""

    before: LoadFigures | None = None
    waited_s: float = 0.0  # spent waiting for the host to be quiet
    quiet_before: bool | None = None  # None: not read
    contended_share: float = 0.25  # other work above this share marks the result contended


class EnergyFigures(BaseModel):
    """Energy of one measurement (docs/metrics.md, "Energy"). A figure nobody could measure is
    None with the reason in `note`, never 0."""

    source: str | None = None  # which counter, what it covers, and its files
    note: str | None = None
    idle_power_w: float | None = None  # before the run, subtracted from the figures below
    power_w: float | None = None  # mean over the timed runs, idle included
    net_power_w: float | None = None  # power_w − idle_power_w
    energy_per_token_j: float | None = None  # decode, net of idle
    prefill_energy_per_token_j: float | None = None  # per prompt token, net of idle


class TimelinePoint(BaseModel):
    """One window of the sustained run."""

    t_s: float  # window start, s from the start of the timed run
    decode_tps: float
    temperature_c: float | None = None  # hottest sensor in the window
    hottest_sensor: str | None = None
    power_w: float | None = None
    anon_swap_bytes: int | None = None  # worker RssAnon + VmSwap at the window's last request
    cpu_freq_share: float | None = None  # mean current CPU frequency ÷ hardware maximum


class SustainReport(BaseModel):
    """Continuous generation for `duration_s`: tokens/s per window and the decay first → last."""

    duration_s: float
    window_s: float
    window_tps: list[float]
    decay_pct: float | None  # (first − last) ÷ first × 100; positive means it slowed down
    flagged: bool  # decay above the threshold (30%): unfit for long sessions
    threshold_pct: float = 30.0
    requests: int = 0
    rss_start_bytes: int | None = None  # worker RSS when the timed run began, and when it ended
    rss_end_bytes: int | None = None
    timeline: list[TimelinePoint] = Field(default_factory=list)
    throttled_after_s: float | None = None  # None: no throttling seen
    throttle_reason: str | None = None
    memory_growth_mib_per_1k: float | None = None  # slope of RssAnon+VmSwap over tokens
    memory_growth_flagged: bool = False
    memory_growth_threshold: float = 2.0  # MiB per 1000 generated tokens


class BenchResult(BaseModel):
    model: str  # as the user named it (path, bundled name or URL)
    model_path: str  # resolved path or URL
    backend: str
    sweep: Literal["prompt_length", "concurrency", "sustain"]
    config: str  # short human label, e.g. "threads=2 prompt=512"
    key: str  # content key in the results store
    settings: dict  # runtime settings + workload + engine version, exactly as run
    status: Literal["ok", "failed"]
    error: str | None = None
    metrics: dict[str, MetricStats] = Field(default_factory=dict)
    sustain: SustainReport | None = None
    machine: MachineState = Field(default_factory=MachineState)
    energy: EnergyFigures | None = None  # None: stored before energy was measured
    host_load: HostLoad | None = None
    contended: bool = False  # other work used more than host_load.contended_share of the CPUs
    repetitions: Repetitions | None = None  # None: stored before the count was recorded
    created: float = 0.0
    cached: bool = False  # loaded from the store instead of measured in this run

    def metric(self, name: str, stat: str = "median") -> float | None:
        m = self.metrics.get(name)
        return None if m is None else getattr(m, stat)

    def summary(self) -> dict:
        """The --json shape: model, settings, status, error, metrics, plus what places the row."""
        return {
            "model": self.model, "model_path": self.model_path, "backend": self.backend, "sweep": self.sweep,
            "config": self.config, "settings": self.settings, "status": self.status,
            "error": self.error,
            "metrics": {k: v.model_dump() for k, v in self.metrics.items()},
            "sustain": self.sustain.model_dump() if self.sustain else None,
            "machine": self.machine.model_dump(), "key": self.key, "cached": self.cached,
            "energy": self.energy.model_dump() if self.energy else None,
            "host_load": self.host_load.model_dump() if self.host_load else None,
            "contended": self.contended,
            "repetitions": self.repetitions.model_dump() if self.repetitions else None,
        }
