"""The record one bench configuration produces (SPEC §6; definitions in docs/metrics.md)."""

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


class MachineState(BaseModel):
    """What the machine was doing around the measurement (seed 000 §3.4: record the state)."""

    load_avg_before: list[float] = Field(default_factory=list)  # 1, 5, 15 min
    load_avg_after: list[float] = Field(default_factory=list)
    temperature_c_before: float | None = None  # hottest readable sensor; None if none readable
    temperature_c_after: float | None = None
    cpu_count: int | None = None
    hostname: str | None = None


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
        }
