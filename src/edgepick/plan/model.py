"""The plan schema. Every section forbids unknown fields so a typo fails before any work starts."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from edgepick.plan.cluster_section import ClusterSection
from edgepick.convert.plan_section import ConvertEntry
from edgepick.evaluate.eval_sets import DataSpec
from edgepick.power.detect import PowerConfig
from edgepick.plan.runtime_axes import RuntimeAxes, split_runtime
from edgepick.records.candidate import RuntimeSettings


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CandidateEntry(_Strict):
    model: str  # GGUF path, bundled name (smollm2, gemma3-270m, ...) or http(s)://host/v1#name
    # an endpoint's API key is read from this environment variable (the key is never stored)
    api_key_env: str | None = None
    label: str | None = None
    backend: str | None = None  # default: llama_cpp for files, openai_http for URLs
    # Same-tokenizer reference for fidelity (KLD, perplexity ratio); none = fidelity skipped.
    reference: str | None = None
    device: str | None = None  # measured on this one of the plan's devices only (a phone's server)
    # a LoRA adapter GGUF loaded with the model, at this scale (seed 003 §7.1)
    adapter: str | None = None
    adapter_scale: float = Field(1.0, gt=0)

    @model_validator(mode="after")
    def _key_for_an_endpoint(self):
        if self.api_key_env and "://" not in self.model:
            raise ValueError("api_key_env goes with an endpoint model (http(s)://host/v1#name)")
        if self.adapter_scale != 1.0 and not self.adapter:
            raise ValueError("adapter_scale goes with an adapter")
        return self


class QuantizeEntry(_Strict):
    """Builds by the quantization lab: one candidate per type, each fit-checked first."""

    source: str  # F16/F32/BF16 GGUF (or a bundled name); quantized sources are requantized
    types: list[str] = Field(..., min_length=1)
    imatrix: str | None = None
    label: str | None = None  # prefix of the candidates' names; default: the source's stem
    reference: str | None = None  # fidelity reference; default: the source itself
    # Depth pruning before quantizing (docs/quantize.md "Pruning", seed 003 §3.3): each item a
    # cut, every cut built in every type. N: the N least important blocks by `prune_by`'s
    # ranking on `prune_text`; a list: those blocks of the source; 0: the source unpruned.
    prune: list[int | list[int]] = Field(default_factory=lambda: [0])
    prune_by: Literal["kld", "influence"] = "kld"
    prune_text: str = "bundled"  # "bundled" = the shipped calibration text, or a UTF-8 file
    prune_ctx: int = Field(256, ge=16)
    prune_chunks: int | None = Field(4, ge=1)

    @field_validator("prune")
    @classmethod
    def _cuts(cls, v: list) -> list:
        if not v:
            raise ValueError("expected at least one cut (0: the source unpruned)")
        seen = []
        for cut in v:
            if isinstance(cut, int) and cut < 0 or isinstance(cut, list) and (
                    not cut or any(b < 0 for b in cut)):
                raise ValueError("a cut is a number of blocks (0 or more) or a non-empty list "
                                 "of block indices (0 or more)")
            key = cut if isinstance(cut, int) else sorted(set(cut))
            if key in seen:
                raise ValueError(f"cut {cut} is listed twice")
            seen.append(key)
        return v


DEFAULT_MAX_REPEATS = 20


class BenchSection(_Strict):
    enabled: bool = True
    prompt_lengths: list[int] = Field(default_factory=lambda: [128, 512])
    gen_tokens: int = Field(64, ge=1)
    warmup: int = Field(1, ge=0)
    repeats: int = Field(5, ge=1)  # with a scenario limit on a median: the minimum
    # A point the scenario gates on (TTFT P50, decode speed, end to end) repeats until each
    # limit is settled, at most this often (docs/bench.md "When repetitions stop").
    # Unset: 20, or `repeats` itself when a plan asks fewer than five (a smoke run: no interval
    # of the median settles anything before five, so more repetitions would only cost time).
    max_repeats: int | None = Field(None, ge=1)

    @property
    def repeat_cap(self) -> int:
        if self.max_repeats is not None:
            return self.max_repeats
        return DEFAULT_MAX_REPEATS if self.repeats >= 5 else self.repeats
    concurrency: list[int] = Field(default_factory=lambda: [1])
    sustain_s: float = Field(0.0, ge=0)
    # Cap each worker's memory: "budget" = the device's model budget, a size, or none.
    mem_limit: str | int | None = None
    timeout_s: float = Field(900.0, gt=0)
    # Energy and measurement hygiene (docs/metrics.md): a meter command or adb serial, how long
    # to wait for a quiet host, which share of other work marks a measurement contended.
    power: PowerConfig = Field(default_factory=PowerConfig)
    quiet_wait_s: float = Field(5.0, ge=0)
    contended_share: float = Field(0.25, gt=0, le=1)
    memory_growth_max: float = Field(2.0, gt=0)  # MiB per 1000 tokens over the sustained run

    @field_validator("prompt_lengths", "concurrency")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if not v or any(x < 1 for x in v):
            raise ValueError("expected a non-empty list of positive integers")
        return v


class EvalSection(_Strict):
    enabled: bool = True
    # A bundled set ("demo", "demo-tools") or a JSONL file, or a list of them, each a name or
    # {set, limit}: one evaluation over all their items (docs/plan.md).
    data: str | list[str | DataSpec] = "demo"
    reference: str | None = None  # GGUF, bundled name or endpoint; required when enabled
    # the environment variable holding the reference endpoint's API key (`run
    # --reference-key-env` sets it; deploy.yaml's cloud.api_key_env is filled from it)
    reference_api_key_env: str | None = None
    limit: int | None = Field(None, ge=1)  # per set without its own: spread over tasks; none = all
    max_tokens: dict[str, int] = Field(default_factory=dict)  # per-task generation budgets
    # Looks that stop each candidate once its gates are settled (docs/evaluate.md);
    # false: every model on every item (fixed N). `max_items` caps the items per model over
    # all sets; `look_items` is how many items each open (candidate, task) cell gets per look.
    sequential: bool = True
    max_items: int | None = Field(None, ge=1)
    look_items: int = Field(4, ge=1)
    # decoding slots of an engine that can decode sequences together (seed 001 §6.2: batches
    # of 4-8 offline), in the one KV cache the model is budgeted for; 1: one at a time
    parallel: int = Field(8, ge=1, le=64)

    @model_validator(mode="after")
    def _key_for_an_endpoint(self):
        if self.reference_api_key_env and "://" not in (self.reference or ""):
            raise ValueError("reference_api_key_env goes with an endpoint reference "
                             "(http(s)://host/v1#name)")
        return self


class FidelitySection(_Strict):
    enabled: bool = True
    text: str = "bundled"  # "bundled" = the shipped fidelity text, or a UTF-8 file
    ctx: int = Field(512, ge=4)
    max_chunks: int | None = Field(4, ge=1)


class FitSection(_Strict):
    margin: float = Field(0.20, ge=0, le=1)  # the seeds' 20% safety margin
    skip_no_fit: bool = True  # candidates predicted not to fit are not measured


class ScenarioSection(_Strict):
    name: str = "realtime_chat"  # a preset name or a scenario YAML file
    overrides: dict = Field(default_factory=dict)  # deep-merged over the preset


class ReportSection(_Strict):
    enabled: bool = True
    lang: str = "both"

    @field_validator("lang")
    @classmethod
    def _lang(cls, v: str) -> str:
        if v not in ("en", "zh", "both"):
            raise ValueError("expected en, zh or both")
        return v


class Plan(_Strict):
    name: str = "plan"
    device: str = "local"  # catalog name, a profile YAML file, or local (probe this machine)
    devices: list[str] = Field(default_factory=list)  # a fleet: node tags or profiles (docs/scale.md)
    cluster: ClusterSection = Field(default_factory=ClusterSection)
    output: str = "edgepick-out"  # relative to the plan file's folder
    store: str | None = None  # default: <output>/results.sqlite
    candidates: list[CandidateEntry] = Field(default_factory=list)
    quantize: list[QuantizeEntry] = Field(default_factory=list)
    convert: list[ConvertEntry] = Field(default_factory=list)  # other engines (docs/engines.md)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)  # records/candidate.py
    # runtime fields listed with several values: each combination a candidate (runtime_axes.py)
    runtime_axes: RuntimeAxes | None = None
    fit: FitSection = Field(default_factory=FitSection)
    bench: BenchSection = Field(default_factory=BenchSection)
    eval: EvalSection = Field(default_factory=EvalSection)
    fidelity: FidelitySection = Field(default_factory=FidelitySection)
    scenario: ScenarioSection = Field(default_factory=ScenarioSection)
    report: ReportSection = Field(default_factory=ReportSection)

    @model_validator(mode="before")
    @classmethod
    def _runtime_lists(cls, data):
        return split_runtime(data)
