"""Run a sweep: every configuration in its own worker, each stored the moment it is measured.

A configuration already stored as `ok` is loaded instead of measured (unless `fresh`); a stored
failure is retried, since its cause (a file, a memory limit, a timeout) may have been fixed. The
store's primary key (kind, content key) means a configuration is held exactly once however
often the sweep is interrupted and restarted.
"""

from __future__ import annotations

import time
from typing import Callable

from edgepick.backends.registry import check_candidate
from edgepick.bench import machine
from edgepick.bench.measure import measure_point, measure_sustain
from edgepick.bench.metrics import aggregate, sustain_report
from edgepick.bench.session import Session, open_session
from edgepick.bench.sweeps import BenchRequest, Config, expand
from edgepick.launch import run_isolated
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.bench.stopping import settles
from edgepick.records.bench import BenchResult, MachineState, Repetitions
from edgepick.store import ResultStore

KIND = "bench"


def _settings(cfg: Config, req: BenchRequest, raw: dict | None) -> dict:
    out: dict = {}
    if cfg.candidate is not None:
        out.update(cfg.candidate.settings.model_dump())
        out["backend"] = cfg.candidate.backend
    out.update(cfg.workload.model_dump())
    out.update(sampling="greedy", mem_limit_bytes=req.mem_limit,
               engine_version=(raw or {}).get("engine_version"))
    if raw and raw.get("server"):
        out["server"] = raw["server"]
    return out


def _result(cfg: Config, req: BenchRequest, ok: bool, raw: dict | None, error: str | None,
            peak_rss: int, peak_rss_swap: int, before: dict, after: dict,
            session: Session | None = None) -> BenchResult:
    host = machine.host()
    state = MachineState(load_avg_before=before["load_avg"], load_avg_after=after["load_avg"],
                         temperature_c_before=before["temperature_c"],
                         temperature_c_after=after["temperature_c"], **host)
    metrics, sustain = {}, None
    if ok and raw is not None:
        # A remote server's memory is not ours to see: the worker's RSS would be the client's.
        in_process = raw.get("in_process", True)
        metrics = aggregate(raw, peak_rss if in_process else None,
                            peak_rss_swap if in_process else None)
        if cfg.workload.sustain_s > 0:
            sustain = sustain_report(raw)
            if not sustain.window_tps:
                ok, error = False, "sustained run shorter than one window"
            elif session is not None:
                sustain = session.complete_sustain(sustain, raw, req.memory_growth_max)
    extra = {} if session is None else session.figures(raw if ok else None)
    if ok and raw and raw.get("repetitions"):
        extra["repetitions"] = Repetitions.model_validate(raw["repetitions"])
    return BenchResult(
        model=cfg.model, model_path=cfg.candidate.model if cfg.candidate else cfg.model,
        backend=cfg.candidate.backend if cfg.candidate else cfg.backend,
        sweep=cfg.sweep, config=cfg.label, key=cfg.key, settings=_settings(cfg, req, raw),
        status="ok" if ok else "failed", error=None if ok else error, metrics=metrics,
        sustain=sustain, machine=state, created=time.time(), **extra)


def measure_config(cfg: Config, req: BenchRequest, *, worker=None) -> BenchResult:
    """One configuration in its own worker, with the host's load, power and temperatures sampled
    from this process around it. `worker` replaces the measuring function (tests wrap the
    engine in a shim)."""
    before = machine.snapshot()
    if cfg.error is not None:
        return _result(cfg, req, False, None, cfg.error, 0, 0, before, before)
    fn = worker or (measure_sustain if cfg.workload.sustain_s > 0 else measure_point)
    args = [cfg.candidate.model_dump(), cfg.workload.model_dump()]
    timeout = None if req.timeout_s is None else req.timeout_s + cfg.workload.sustain_s
    if cfg.rule is not None:
        args.append(cfg.rule.model_dump())
        if timeout is not None:  # the bound was set for the fixed count: scale it to the most
            timeout *= cfg.rule.most / max(1, cfg.workload.repeats)
    with open_session(req) as session:
        out = run_isolated(fn, *args, mem_limit=req.mem_limit, timeout=timeout)
    return _result(cfg, req, out.ok, out.value, out.error, out.peak_rss_bytes,
                   out.peak_rss_swap_bytes, before, machine.snapshot(), session)


def run_bench(req: BenchRequest, store: ResultStore, *, fresh: bool = False,
              on_start: Callable[[Config, int, int], None] | None = None,
              on_result: Callable[[BenchResult], None] | None = None) -> list[BenchResult]:
    configs = expand(req)
    for cand in {c.candidate.name: c.candidate for c in configs if c.candidate}.values():
        check_candidate(cand)  # an engine that cannot run the model: refused before measuring
    results = []
    for i, cfg in enumerate(configs):
        if on_start:
            on_start(cfg, i, len(configs))
        stored = store.get(KIND, cfg.key) if cfg.key and not fresh else None
        if stored is not None and stored.get("status") == "ok" and _enough(stored, cfg):
            res = BenchResult.model_validate(stored)
            res.cached = True
        else:
            res = measure_config(cfg, req)
            if cfg.key:
                store.put(KIND, cfg.key, res.model_dump(mode="json"), label=cfg.label)
        results.append(res)
        if on_result:
            on_result(res)
    return results


def _enough(stored: dict, cfg: Config) -> bool:
    """A stored row serves unless this run's limits need more repetitions than it ran: it
    settles them, or it already ran this rule's maximum (resuming measures nothing twice)."""
    if cfg.rule is None:
        return True
    res = BenchResult.model_validate(stored)
    ran = res.repetitions.ran if res.repetitions else cfg.workload.repeats
    return ran >= cfg.rule.most or settles(res.metrics, cfg.rule)


def run(req: BenchRequest, store: ResultStore, progress: Tick = silent, *, fresh: bool = False,
        on_result: Callable[[BenchResult], None] | None = None) -> list[BenchResult]:
    """The bench stage's entry point: every configuration of the sweep, stored under kind
    "bench" keyed by candidate and workload (seed 000 §3.4: measured on the device itself)."""
    configs: list[int] = [0]

    def on_start(cfg: Config, i: int, n: int) -> None:
        configs[0] = n
        who = cfg.candidate.name if cfg.candidate else cfg.model
        progress(ProgressEvent(i, n, f"{who} {cfg.label}"))

    out = run_bench(req, store, fresh=fresh, on_start=on_start, on_result=on_result)
    progress(ProgressEvent(configs[0], configs[0], "done"))
    return out
