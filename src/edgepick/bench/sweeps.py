"""A bench request → the list of configurations to measure, one worker and one stored row each.

For every model and thread count: one configuration per prompt length (the TTFT and memory
curve), one per concurrency level above 1 at the first prompt length (level 1 is that length's
row), and one sustained run at the first prompt length. Thread counts multiply everything: the
thread sweep is the same curves at each count.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from edgepick.backends import supports
from edgepick.backends.base import IN_PROCESS
from edgepick.bench.stopping import Limit, StopRule
from edgepick.bench.workload import Workload
from edgepick.errors import EdgepickError
from edgepick.power.detect import PowerConfig
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.model_ref import DEFAULT_ENGINE, ModelRef
from edgepick.store.identity import content_key


class BenchRequest(BaseModel):
    """What to measure: models already resolved, one runtime, and the workload sweep."""

    model_config = ConfigDict(frozen=True)

    models: list[ModelRef] = Field(..., min_length=1)
    settings: RuntimeSettings = Field(default_factory=RuntimeSettings)
    threads: list[int] | None = None  # thread counts to sweep; None: settings.threads alone
    prompt_lengths: list[int] = Field(default_factory=lambda: [128])
    gen_tokens: int = 128
    warmup: int = 1
    repeats: int = 5  # the fixed count; with limits, the minimum (seed 000 §3.4: five or more)
    # Limits on medians by prompt length (the plan's scenario gates, plan/bench_limits.py): the
    # concurrency-1 point of that length repeats until each is settled, at most max_repeats
    # times (bench/stopping.py). Neither is part of a configuration's key.
    max_repeats: int | None = None
    limits: dict[int, list[Limit]] = Field(default_factory=dict)
    concurrency: list[int] = Field(default_factory=lambda: [1])
    sustain_s: float = 0.0
    mem_limit: int | None = None
    timeout_s: float | None = 900.0
    # Measurement hygiene and energy (docs/metrics.md): none of these changes what is measured,
    # so none is part of a configuration's key.
    power: PowerConfig = Field(default_factory=PowerConfig)
    quiet_wait_s: float = Field(0.0, ge=0)  # wait at most this long for a quiet host
    contended_share: float = Field(0.25, gt=0, le=1)  # other work above this: contended
    memory_growth_max: float = Field(2.0, gt=0)  # MiB per 1000 tokens over the sustained run

    def thread_counts(self) -> list[int]:
        return self.threads or [self.settings.threads]


@dataclass
class Config:
    model: str  # as the user named it
    candidate: Candidate | None  # None when the model file cannot be read
    workload: Workload
    sweep: str  # prompt_length | concurrency | sustain
    label: str
    key: str
    error: str | None = None  # known to fail before running (unreadable file)
    backend: str = DEFAULT_ENGINE
    rule: StopRule | None = None  # None: the fixed number of repeats

    @property
    def in_process(self) -> bool:
        if self.candidate is None:
            return True
        return supports(self.candidate.backend, IN_PROCESS)


def request_keys(req: BenchRequest) -> list[str]:
    """The keys the bench stores `req`'s configurations under (kind "bench"), one each."""
    return [cfg.key for cfg in expand(req) if cfg.key]


NETWORK_KIND = "network"


def network_key(req: BenchRequest) -> str:
    """The key the round trip to `req`'s endpoint, timed beside its bench, is stored under (kind
    NETWORK_KIND): made from the bench's own keys, so a re-run finds it with them."""
    keys = [("bench", k) for k in request_keys(req)]
    return hashlib.sha256(json.dumps(["network", keys]).encode()).hexdigest()[:32]


def expand(req: BenchRequest) -> list[Config]:
    if any(p < 1 for p in req.prompt_lengths) or not req.prompt_lengths:
        raise EdgepickError("--prompt-lengths: expected positive token counts, e.g. 128,512")
    if any(c < 1 for c in req.concurrency) or any(t < 1 for t in req.thread_counts()):
        raise EdgepickError("--concurrency and --threads take positive integers")
    base_len = req.prompt_lengths[0]
    configs: list[Config] = []
    seen: set[str] = set()
    for ref in req.models:
        in_process = supports(ref.backend, IN_PROCESS)
        # A remote server runs with its own threads; sweeping ours would measure nothing new.
        threads = req.thread_counts() if in_process else req.thread_counts()[:1]
        for t in threads:
            cand = Candidate(ref=ref, settings=req.settings.model_copy(update={"threads": t}))
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
                    key = content_key(cand, wl)
                except OSError as exc:
                    configs.append(Config(ref.spec, None, wl, sweep, label, key="",
                                          error=f"{ref.path}: cannot read ({exc.strerror})",
                                          backend=ref.backend))
                    continue
                if key not in seen:  # the same model named twice is measured once
                    seen.add(key)
                    configs.append(Config(ref.spec, cand, wl, sweep, label, key,
                                          rule=rule_for(req, sweep, wl)))
    return configs


def rule_for(req: BenchRequest, sweep: str, wl: Workload) -> StopRule | None:
    """The stopping rule of a prompt-length point some limit gates; None: fixed repeats (no
    limit, or a maximum no larger than the count)."""
    limits = req.limits.get(wl.prompt_tokens) if sweep == "prompt_length" else None
    if not limits or (req.max_repeats or 0) <= req.repeats:
        return None
    return StopRule(min_repeats=req.repeats, max_repeats=req.max_repeats or req.repeats,
                    limits=limits)
