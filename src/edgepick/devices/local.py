"""This machine as a target, measured once and cached per machine and engine version.

`--device local` must give the same estimate twice in a row: this host's bandwidth swings by
±15% between probes seconds apart (docs/fit.md), so re-probing on every call made three `fit`
runs minutes apart disagree by 30%. The bandwidth probe is cached with its date; the engine
calibration (devices/engine_probe.py, 20-30 s) is opt-in (`probe --engine`, `fit --calibrate`)
and cached beside it. Only what drifts by the minute (available RAM, load, sensors) is read live.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable

import psutil
from pydantic import BaseModel, ValidationError

from edgepick.devices.probe import probe, sensors
from edgepick.records.device import DeviceProfile

Notify = Callable[[str], None]


class CachedProbe(BaseModel):
    """One machine's probe as stored: its profile, when it was measured, and what it is for."""

    machine: dict
    measured_at: str  # ISO 8601, UTC
    calibrated_at: str | None = None  # when the engine calibration in `profile` was measured
    profile: DeviceProfile


def cache_dir() -> Path:
    """Beside the default results store (EDGEPICK_HOME, ~/.edgepick): this machine's state."""
    return Path(os.environ.get("EDGEPICK_HOME", Path.home() / ".edgepick")) / "devices"


def machine_identity() -> dict:
    """What makes a cached probe this machine's with this engine; nothing that drifts."""
    try:
        engine = f"llama-cpp-python {version('llama-cpp-python')}"
    except PackageNotFoundError:
        engine = "no llama-cpp-python"
    model = ""
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh
                          if ln.startswith(("model name", "Model"))), "")
    except OSError:
        pass
    return {"host": platform.node(), "arch": platform.machine(), "cpu": model,
            "logical_cpus": os.cpu_count(), "ram_gib": round(psutil.virtual_memory().total / 2**30),
            "engine": engine}


def cache_path(identity: dict | None = None) -> Path:
    blob = json.dumps(identity or machine_identity(), sort_keys=True).encode()
    return cache_dir() / f"local-{hashlib.sha256(blob).hexdigest()[:16]}.json"


def read_cached() -> CachedProbe | None:
    identity = machine_identity()
    path = cache_path(identity)
    try:
        cached = CachedProbe.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None  # absent, or written by another version: measure again
    return cached if cached.machine == identity else None


def save(profile: DeviceProfile, calibrated_at: str | None = None) -> CachedProbe:
    identity = machine_identity()
    entry = CachedProbe(machine=identity, measured_at=now(), calibrated_at=calibrated_at,
                        profile=profile.model_copy(update={"extra": _stable(profile.extra)}))
    path = cache_path(identity)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(entry.model_dump_json(indent=1), encoding="utf-8")
    tmp.replace(path)  # atomic: a concurrent reader sees the old probe or the new one
    return entry


def local_device(*, calibrate: bool = False, refresh: bool = False,
                 notify: Notify | None = None,
                 accept: Callable[[DeviceProfile], None] | None = None) -> DeviceProfile:
    """This machine: the cached probe when there is one (available RAM read now), else measured
    and cached. `calibrate` also measures the engine (and re-measures the bandwidth beside it);
    `refresh` re-measures what the cache holds. The profile's extra["probe"] says which.
    `accept` sees a new measurement before it is cached and may refuse it by raising (the CLI
    refuses one taken on a busy host)."""
    say = notify or (lambda _msg: None)
    previous = read_cached()
    if previous is not None and not (calibrate or refresh):
        return _with_live_readings(previous, "cached")
    # a refresh keeps what the cache held: a calibrated machine is calibrated again
    recalibrate = calibrate or (previous is not None and previous.calibrated_at is not None)
    say("measuring this machine's memory bandwidth and compute"
        + (" and the engine's decode speed (20-30 s)" if recalibrate else ""))
    profile = probe(engine=recalibrate)
    if accept is not None:
        accept(profile)
    stamp = now() if profile.decode_calibration is not None else None
    return _with_live_readings(save(profile, stamp), "measured now")


def describe(profile: DeviceProfile) -> str:
    """One line: where this local profile's figures come from, with their dates."""
    info = profile.extra.get("probe") or {}
    if not info:
        return "measured now"
    cal = (f"engine calibration of {_day(info['calibrated_at'])}" if info.get("calibrated_at")
           else "no engine calibration (fit --calibrate or probe --engine measures one)")
    how = "cached probe" if info.get("source") == "cached" else "probe"
    return (f"{how} of {_day(info['measured_at'])} ({info.get('engine')}), {cal}"
            + ("; --refresh re-measures" if info.get("source") == "cached" else ""))


def _with_live_readings(entry: CachedProbe, source: str) -> DeviceProfile:
    extra = {**entry.profile.extra, **sensors(),
             "probe": {"source": source, "measured_at": entry.measured_at,
                       "calibrated_at": entry.calibrated_at, "engine": entry.machine["engine"],
                       "path": str(cache_path(entry.machine))}}
    return entry.profile.model_copy(update={
        "model_budget_bytes": psutil.virtual_memory().available, "extra": extra})


def _stable(extra: dict) -> dict:
    # readings of the moment are not worth keeping: they are read again on every use
    return {k: v for k, v in extra.items()
            if k not in ("temperatures_c", "battery", "load_avg", "probe")}


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _day(iso: str) -> str:
    return iso.replace("T", " ").removesuffix("+00:00") + " UTC"
