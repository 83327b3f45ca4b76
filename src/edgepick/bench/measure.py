"""One configuration measured inside a worker process: load, warm up, repeat, report raw samples.

Arguments and results are plain dicts so the call pickles cheaply into a spawned process; the
parent turns the raw samples into metrics (bench.metrics) so the rules live in one place.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

from edgepick.backends import LoadOptions, get_backend
from edgepick.backends.base import IN_PROCESS
from edgepick.bench import need
from edgepick.bench.stopping import StopRule, judge, stop_reason
from edgepick.bench.workload import Workload, prompt_of_length
from edgepick.launch import own_peak_rss, own_rss
from edgepick.errors import EdgepickError
from edgepick.records.candidate import Candidate


def anon_swap_bytes() -> int | None:
    """RssAnon + VmSwap of this process: the memory a leak grows (file-backed pages of an
    mmapped model come and go with the page cache and say nothing about leaks)."""
    got = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(("RssAnon:", "VmSwap:")):
                    k, v = line.split(":", 1)
                    got[k] = int(v.split()[0]) * 1024
    except OSError:
        return None
    return got["RssAnon"] + got.get("VmSwap", 0) if "RssAnon" in got else None


def _request(gen) -> dict:
    times = list(gen.token_times)
    return {"prompt_tokens": gen.prompt_tokens, "generated_tokens": gen.generated_tokens,
            "token_times": times, "prefill_s": gen.prefill_s,
            "e2e_s": times[-1] if times else None}


def _open(cand: Candidate, wl: Workload):
    backend = get_backend(cand.backend)
    in_process = backend.supports(IN_PROCESS)
    if in_process and wl.prompt_tokens + wl.gen_tokens > cand.settings.n_ctx:
        raise EdgepickError(f"prompt of {wl.prompt_tokens} + {wl.gen_tokens} generated tokens "
                            f"exceed the context of {cand.settings.n_ctx} (raise --ctx)")
    rss_before = own_peak_rss()
    load_s = backend.load(cand, LoadOptions(n_seq=wl.concurrency))
    if in_process:
        need.after_load()  # pages only the load read (repacked originals) stop counting as read
    raw = {
        "load_s": load_s if in_process else None,
        "rss_before_load": rss_before, "rss_after_load": own_peak_rss(),
        "engine_version": backend.engine_version(),
        "server": backend.server_settings(),
        "in_process": in_process,
    }
    return backend, raw


def _prompts(backend, wl: Workload) -> list[list[int]]:
    return [prompt_of_length(backend.tokenize, wl.prompt_tokens, variant=i)
            for i in range(wl.concurrency)]


def _one_run(backend, prompts: list[list[int]], wl: Workload) -> list:
    if len(prompts) == 1:
        return [backend.generate(prompts[0], max_tokens=wl.gen_tokens, ignore_eos=True)]
    return backend.generate_concurrent(prompts, wl.gen_tokens, ignore_eos=True)


@contextmanager
def _warmed(candidate: dict, workload: dict) -> Iterator[tuple]:
    """(candidate, workload, engine, raw record, prompts): the engine loaded for the workload
    with its untimed warm-up runs done; unloaded on the way out, whatever happened."""
    cand = Candidate.model_validate(candidate)
    wl = Workload.model_validate(workload)
    backend, raw = _open(cand, wl)
    try:
        prompts = _prompts(backend, wl)
        for _ in range(wl.warmup):
            _one_run(backend, prompts, wl)
        yield cand, wl, backend, raw, prompts
    finally:
        backend.unload()


def measure_point(candidate: dict, workload: dict, rule: dict | None = None) -> dict:
    """`warmup` untimed runs, then timed ones until bench.stopping says stop: `repeats` of them
    without a rule, else between its minimum and maximum once every limit is settled. Each run
    submits `concurrency` requests."""
    with _warmed(candidate, workload) as (cand, wl, backend, raw, prompts):
        raw.update(repeat_runs(lambda: _one_run(backend, prompts, wl), wl.repeats,
                               None if rule is None else StopRule.model_validate(rule)))
        if raw["in_process"]:
            raw["memory"] = {**need.split_now(), "mmap": cand.settings.mmap}
    return raw


def repeat_runs(run_once, repeats: int, rule: StopRule | None) -> dict:
    """The timed runs and the record of how many ran and why they stopped (bench.stopping)."""
    runs: list[dict] = []
    while True:
        t0 = time.monotonic()  # the parent's power and load samples use the same clock
        runs.append({"t0": t0, "requests": [_request(g) for g in run_once()]})
        why = stop_reason(runs, rule, repeats)
        if why is not None:
            break
    ruled = rule is not None and rule.limits
    rep = {"ran": len(runs), "min": rule.min_repeats if ruled else repeats,
           "max": rule.most if ruled else repeats, "stopped": why,
           "limits": [j.model_dump() for j in judge(runs, rule)] if ruled else []}
    return {"runs": runs, "repetitions": rep}


def measure_sustain(candidate: dict, workload: dict) -> dict:
    """Back-to-back requests of a fixed size for `sustain_s` seconds.

    Fixed-size requests keep the work per token stationary, so a falling rate shows the machine
    (heat, throttling, memory pressure, leaks), not a growing context."""
    with _warmed(candidate, workload) as (cand, wl, backend, raw, prompts):
        token_times: list[float] = []
        runs = []
        rss_start = own_rss()
        memory = [(0.0, 0, anon_swap_bytes())]  # (s from start, tokens so far, RssAnon+VmSwap)
        tokens = 0
        t_mono, t_start = time.monotonic(), time.perf_counter()
        while time.perf_counter() - t_start < wl.sustain_s:
            submitted = time.perf_counter() - t_start
            gens = _one_run(backend, prompts, wl)
            for g in gens:
                token_times.extend(submitted + t for t in g.token_times)
                tokens += g.generated_tokens
            runs.append({"t0": t_mono + submitted, "requests": [_request(g) for g in gens]})
            memory.append((time.perf_counter() - t_start, tokens, anon_swap_bytes()))
        raw.update(duration_s=wl.sustain_s, token_times=sorted(token_times), runs=runs,
                   requests=sum(len(r["requests"]) for r in runs), rss_start=rss_start,
                   rss_end=own_rss(), t0=t_mono, memory_timeline=memory)
    return raw

