"""A bench request → the list of configurations to measure, one worker and one stored row each.

For every model and thread count: one configuration per prompt length (the TTFT and memory
curve), one per concurrency level above 1 at the first prompt length (level 1 is that length's
row), and one sustained run at the first prompt length. Thread counts multiply everything: the
thread sweep is the same curves at each count.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

from edgepick.backends import supports
from edgepick.backends.base import IN_PROCESS
from edgepick.bench.workload import Workload
from edgepick.errors import EdgepickError
from edgepick.records.candidate import Candidate, RuntimeSettings


class BenchRequest(BaseModel):
    models: list[str] = Field(..., min_length=1)
    backend: str | None = None  # None: openai_http for URLs, llama_cpp for files
    threads: list[int] = Field(default_factory=lambda: [2])
    n_ctx: int = 2048
    n_batch: int = 512
    n_ubatch: int = 512
    kv_type: str = "f16"
    flash_attn: bool = True
    seed: int = 42
    prompt_lengths: list[int] = Field(default_factory=lambda: [128])
    gen_tokens: int = 128
    warmup: int = 1
    repeats: int = 5
    concurrency: list[int] = Field(default_factory=lambda: [1])
    sustain_s: float = 0.0
    mem_limit: int | None = None
    timeout_s: float | None = 900.0


@dataclass
class Config:
    model: str  # as the user named it
    candidate: Candidate | None  # None when the model could not even be resolved
    workload: Workload
    sweep: str  # prompt_length | concurrency | sustain
    label: str
    key: str
    error: str | None = None  # known to fail before running (unresolvable model)

    @property
    def in_process(self) -> bool:
        if self.candidate is None:
            return True
        return supports(self.candidate.backend, IN_PROCESS)


def _backend_for(path: str, requested: str | None) -> str:
    if requested:
        return requested
    return "openai_http" if "://" in path else "llama_cpp"


def _resolve(model: str) -> str:
    from edgepick.assets.bundled import resolve_model

    return resolve_model(model)


def expand(req: BenchRequest) -> list[Config]:
    if any(p < 1 for p in req.prompt_lengths) or not req.prompt_lengths:
        raise EdgepickError("--prompt-lengths: expected positive token counts, e.g. 128,512")
    if any(c < 1 for c in req.concurrency) or any(t < 1 for t in req.threads):
        raise EdgepickError("--concurrency and --threads take positive integers")
    base_len = req.prompt_lengths[0]
    configs: list[Config] = []
    seen: set[str] = set()
    for model in req.models:
        try:
            path = _resolve(model)
            backend = _backend_for(path, req.backend)
            in_process = supports(backend, IN_PROCESS)
        except EdgepickError as exc:
            wl = Workload(prompt_tokens=base_len, gen_tokens=req.gen_tokens)
            configs.append(Config(model, None, wl, "prompt_length", model, key="", error=str(exc)))
            continue
        # A remote server runs with its own threads; sweeping ours would measure nothing new.
        threads = req.threads if in_process else req.threads[:1]
        for t in threads:
            settings = RuntimeSettings(threads=t, n_ctx=req.n_ctx, n_batch=req.n_batch,
                                       n_ubatch=req.n_ubatch, kv_type=req.kv_type,
                                       flash_attn=req.flash_attn, seed=req.seed)
            cand = Candidate(model=path, backend=backend, settings=settings, label=model)
            common = dict(gen_tokens=req.gen_tokens, warmup=req.warmup, repeats=req.repeats)
            points: list[tuple[str, Workload, str]] = []
            for n in dict.fromkeys(req.prompt_lengths):
                points.append(("prompt_length", Workload(prompt_tokens=n, **common),
                               f"threads={t} prompt={n}"))
            for c in dict.fromkeys(req.concurrency):
                if c > 1:
                    points.append(("concurrency", Workload(prompt_tokens=base_len, concurrency=c,
                                                           **common),
                                   f"threads={t} prompt={base_len} concurrency={c}"))
            if req.sustain_s > 0:
                points.append(("sustain", Workload(prompt_tokens=base_len, sustain_s=req.sustain_s,
                                                   **common),
                               f"threads={t} prompt={base_len} sustain={req.sustain_s:g}s"))
            for sweep, wl, label in points:
                try:
                    key = cand.content_key(wl)
                except OSError as exc:
                    configs.append(Config(model, None, wl, sweep, label, key="",
                                          error=f"{path}: cannot read ({exc.strerror})"))
                    continue
                if key not in seen:  # the same model named twice is measured once
                    seen.add(key)
                    configs.append(Config(model, cand, wl, sweep, label, key))
    return configs
