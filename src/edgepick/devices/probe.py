"""Measure this machine: cores, memory, sustained read bandwidth, compute, sensors."""

from __future__ import annotations

import os
import platform
import signal
import statistics
import time

import numpy as np
import psutil

from edgepick.devices.engine_probe import engine_probe
from edgepick.errors import EdgepickError
from edgepick.launch import spawn_context
from edgepick.launch.process import die_with_parent
from edgepick.power import PowerConfig, detect, find_sources
from edgepick.power.cpufreq import policy_dirs
from edgepick.power.thermal import sensor_files
from edgepick.records.device import DeviceProfile

_FEATURES = ("avx", "avx2", "avx512f", "avx512_vnni", "avx_vnni", "fma", "f16c", "amx_tile",
             "neon", "asimd", "asimddp", "sve", "i8mm")


def cpu_features() -> list[str]:
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    flags.update(line.split(":", 1)[1].split())
    except OSError:
        pass
    found = [f for f in _FEATURES if f in flags]
    if "asimd" in found and "neon" not in found:
        found.insert(0, "neon")
    return found


def _reader(n_bytes: int, runs: int, barrier, results) -> None:
    die_with_parent(signal.SIGKILL)  # a probe killed outright takes its readers with it
    buf = np.ones(n_bytes // 8, dtype=np.int64)
    np.add.reduce(buf)  # fault the pages in before timing
    times = []
    for _ in range(runs):
        barrier.wait()
        t0 = time.perf_counter()
        np.add.reduce(buf)
        times.append(time.perf_counter() - t0)
    results.put(times)


def measure_bandwidth(size_bytes: int = 512 * 1024**2, runs: int = 5,
                      threads: int | None = None) -> dict:
    """Median GB/s of timed streaming reads of buffers far larger than the caches.

    One process per core reads its own slice at the same moment (a barrier starts each run), as
    a decoding engine's threads do; a run's bandwidth is all bytes ÷ the slowest reader's time.
    Processes rather than threads, so the figure never depends on the GIL.
    """
    threads = threads or os.cpu_count() or 1
    ctx = spawn_context()
    barrier = ctx.Barrier(threads)
    results = ctx.Queue()
    share = size_bytes // threads // 8 * 8
    procs = [ctx.Process(target=_reader, args=(share, runs, barrier, results), daemon=True)
             for _ in range(threads)]
    for p in procs:
        p.start()
    per_proc = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    rates = [share * threads / max(t[i] for t in per_proc) / 1e9 for i in range(runs)]
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates),
            "runs": runs, "buffer_bytes": share * threads, "threads": threads}


def measure_compute(n: int = 1024, runs: int = 5) -> float:
    """Median FP32 GFLOPS of a square matmul (numpy's BLAS, all cores)."""
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    b = a.T.copy()
    a @ b
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    return 2 * n**3 / statistics.median(times) / 1e9


def sensors() -> dict:
    out: dict = {}
    try:
        temps = psutil.sensors_temperatures() or {}
        out["temperatures_c"] = {k: [t.current for t in v] for k, v in temps.items()}
    except (AttributeError, OSError):
        out["temperatures_c"] = {}
    try:
        bat = psutil.sensors_battery()
        out["battery"] = None if bat is None else {"percent": bat.percent,
                                                   "plugged": bat.power_plugged}
    except (AttributeError, OSError):
        out["battery"] = None
    out["load_avg"] = list(os.getloadavg())
    out.update(power_and_thermal_sources())
    return out


def power_and_thermal_sources(root: str = "/") -> dict:
    """The power counters and temperature sensors found, with their paths (power/)."""
    cfg = PowerConfig(sysfs_root=root)
    _, line = detect(cfg)
    return {"power": line, "power_sources": [f.line() for f in find_sources(cfg)],
            "thermal_sensors": {k: str(v) for k, v in sensor_files(root).items()},
            "cpufreq": [str(d) for d in policy_dirs(root)]}


def probe(bandwidth_bytes: int = 512 * 1024**2, engine: bool = False) -> DeviceProfile:
    """This machine measured now; with `engine`, also its decode calibration (20-30 s of decoding
    small synthetic models, devices/engine_probe.py), which the speed estimate then uses.
    `--device local` reads the cached probe instead (devices/local.py)."""
    vm = psutil.virtual_memory()
    bw = measure_bandwidth(bandwidth_bytes)
    gflops = measure_compute()
    extra = sensors()
    extra["bandwidth"] = bw
    extra["swap_total_bytes"] = psutil.swap_memory().total
    device = DeviceProfile(
        name="local", description=f"{platform.node()} ({platform.machine()}, {platform.system()})",
        total_ram_bytes=vm.total, model_budget_bytes=vm.available,
        bandwidth_gbps=round(bw["median"], 2), compute_gflops=round(gflops, 1),
        cores=psutil.cpu_count(logical=False) or os.cpu_count(), cpu_features=cpu_features(),
        notes=f"logical cpus {os.cpu_count()}; budget = RAM available at probe time",
        measured=True, extra=extra,
    )
    if not engine:
        return device

    try:
        return engine_probe(device)
    except EdgepickError as exc:  # the rest of the probe stands; estimates fall back to constants
        device.extra["engine_probe_error"] = str(exc)
        return device
