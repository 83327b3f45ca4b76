"""One candidate measured inside a worker process: load, warm up, repeat, report raw samples."""

from __future__ import annotations

import time

from edgepick.backends import get_backend
from edgepick.bench.workload import Workload, prompt_of_length
from edgepick.bench.worker import own_peak_rss
from edgepick.records.candidate import Candidate


def measure_candidate(candidate: dict, workload: dict) -> dict:
    """Raw per-run samples; aggregation happens in the parent. Arguments are plain dicts so the
    call pickles cheaply into a spawned process."""
    cand = Candidate.model_validate(candidate)
    wl = Workload.model_validate(workload)
    backend = get_backend(cand.backend)
    rss_before = own_peak_rss()
    load_s = backend.load(cand)
    rss_loaded = own_peak_rss()
    prompt = prompt_of_length(backend.tokenize, wl.prompt_tokens)
    runs = []
    try:
        for i in range(wl.warmup + wl.repeats):
            t0 = time.perf_counter()
            gen = backend.generate(prompt, max_tokens=wl.gen_tokens, ignore_eos=True)
            wall = time.perf_counter() - t0
            if i < wl.warmup:
                continue
            times = gen.token_times
            itl = [b - a for a, b in zip(times, times[1:])]
            runs.append({
                "prompt_tokens": gen.prompt_tokens, "generated_tokens": gen.generated_tokens,
                "ttft_s": gen.ttft_s, "prefill_s": gen.prefill_s, "e2e_s": wall,
                "decode_tps": gen.decode_tps, "itl_s": itl,
            })
    finally:
        backend.unload()
    return {"load_s": load_s, "runs": runs, "rss_before_load": rss_before,
            "rss_after_load": rss_loaded}
