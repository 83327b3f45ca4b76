"""Two models resident on one device (seed 001 §6.3: a light model and a medium one, preloaded
or swapped): what the pair needs in memory, each one's time to first token while both are
loaded, and the time to first token of a request whose model must first be swapped in.

All of it is measured in one spawned worker, as bench measures one model (bench/measure.py):
memory is the measured need of bench/need.py (peak anonymous memory plus the file pages read
while running), first with A alone, then with A and B both loaded and both answering. The swap
unloads A with B still resident and times a request for A from its arrival: A's load, its
prefill and its first token, repeated `swaps` times; the median carries the order-statistic
interval bench uses for its own medians (bench/median_ci.py).
"""

from __future__ import annotations

import time
from statistics import median

from pydantic import BaseModel, ConfigDict, Field

from edgepick.backends import get_backend
from edgepick.bench import need
from edgepick.bench.median_ci import median_interval
from edgepick.bench.workload import prompt_of_length
from edgepick.errors import EdgepickError
from edgepick.launch import run_isolated
from edgepick.records.candidate import Candidate
from edgepick.store.identity import content_key

PAIR_KIND = "bench_pair"


class PairRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    a: Candidate
    b: Candidate
    prompt_tokens: int = Field(128, ge=1)
    gen_tokens: int = Field(16, ge=1)
    swaps: int = Field(5, ge=3)  # an interval for a median needs a few
    timeout_s: float | None = 900.0


class PairResult(BaseModel):
    a: str
    b: str
    need_a: int | None  # bytes, A alone
    need_pair: int | None  # A and B resident, both having answered
    ttft_ms: dict[str, float]  # each model's first token while both are resident
    load_ms: list[float]  # A's load, each swap
    swap_ttft_ms: list[float]  # a request for A that waits for A to load, each swap
    swap_ttft_median_ms: float
    swap_ttft_ci95: list[float] | None
    key: str

    @property
    def need_b_added(self) -> int | None:
        if self.need_a is None or self.need_pair is None:
            return None
        return self.need_pair - self.need_a


def _first_token_s(backend, tokens: list[int], gen: int) -> float:
    t0 = time.perf_counter()
    g = backend.generate(tokens, max_tokens=gen, ignore_eos=True)
    return g.token_times[0] if g.token_times else time.perf_counter() - t0


def _need(mmap: bool) -> int | None:
    s = need.split_now()
    return need.need_bytes(s.get("anon"), s.get("file_read"), s.get("hwm"), mmap)


def measure_pair(a: dict, b: dict, prompt_tokens: int, gen_tokens: int, swaps: int) -> dict:
    """The worker (launch.run_isolated): both models in this one process."""
    ca, cb = Candidate.model_validate(a), Candidate.model_validate(b)
    ea, eb = get_backend(ca.backend), get_backend(cb.backend)
    ea.load(ca)
    try:
        need.after_load()
        pa = prompt_of_length(ea.tokenize, prompt_tokens)
        _first_token_s(ea, pa, gen_tokens)
        out: dict = {"need_a": _need(ca.settings.mmap)}
        eb.load(cb)
        try:
            need.after_load()
            pb = prompt_of_length(eb.tokenize, prompt_tokens)
            out["ttft_s"] = {"a": _first_token_s(ea, pa, gen_tokens),
                             "b": _first_token_s(eb, pb, gen_tokens)}
            out["need_pair"] = _need(ca.settings.mmap and cb.settings.mmap)
            out["load_s"], out["swap_ttft_s"] = [], []
            for _ in range(swaps):
                ea.unload()
                t0 = time.perf_counter()
                ea.load(ca)
                loaded = time.perf_counter() - t0
                out["load_s"].append(loaded)
                out["swap_ttft_s"].append(loaded + _first_token_s(ea, pa, gen_tokens))
        finally:
            eb.unload()
    finally:
        ea.unload()
    return out


def run(req: PairRequest, store) -> PairResult:
    """Measured in a worker and stored (kind bench_pair); a stored result is returned as is."""
    key = content_key(req.a, {"pair": content_key(req.b), "prompt": req.prompt_tokens,
                              "gen": req.gen_tokens, "swaps": req.swaps})
    got = store.get(PAIR_KIND, key)
    if got is not None:
        return PairResult.model_validate(got)
    out = run_isolated(measure_pair, req.a.model_dump(), req.b.model_dump(), req.prompt_tokens,
                       req.gen_tokens, req.swaps, timeout=req.timeout_s)
    if not out.ok:
        raise EdgepickError(f"{req.a.name} + {req.b.name}: {out.error}")
    v = out.value
    swap_ms = [s * 1e3 for s in v["swap_ttft_s"]]
    ci = median_interval(swap_ms, req.swaps, req.swaps)
    res = PairResult(a=req.a.name, b=req.b.name, need_a=v["need_a"], need_pair=v["need_pair"],
                     ttft_ms={req.a.name: v["ttft_s"]["a"] * 1e3,
                              req.b.name: v["ttft_s"]["b"] * 1e3},
                     load_ms=[s * 1e3 for s in v["load_s"]], swap_ttft_ms=swap_ms,
                     swap_ttft_median_ms=median(swap_ms), swap_ttft_ci95=list(ci) if ci else None,
                     key=key)
    store.put(PAIR_KIND, key, res.model_dump(), label=f"{req.a.name} + {req.b.name}")
    return res
