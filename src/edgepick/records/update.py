"""deploy.yaml's `update:` section (the limits a model update must stay within before and after
it serves) and what the registry records about a version's probe and canary (seed 001 §6.4;
docs/registry.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CanaryPolicy(_Strict):
    """After a live activation, how long serve watches the new version against the one before,
    and how much evidence a figure needs before it can count as worse."""

    window_s: float = Field(600.0, ge=0)  # 0: no canary
    check_every_s: float = Field(5.0, gt=0)
    min_requests: int = Field(20, ge=1)  # per version, for the error rate and TTFT P99
    min_sampled: int = Field(10, ge=1)  # per version, for the sampled unacceptable rate
    latency_tolerance: float = Field(1.2, ge=1)  # TTFT P99 and memory: this many times worse
    # the canary's own quality probe (registry/canary_probe.py): this many of the deploy's eval
    # items answered by both versions around the switch; 0: none
    probe_items: int = Field(16, ge=0)
    probe_max_tokens: int = Field(48, ge=1)
    keep_previous: bool = True  # the previous version cannot be removed while the window is open


class UpdatePolicy(_Strict):
    """The probe before activation: KLD and top-1 agreement of the new version against the
    active one (or `reference`) on a fixed text, plus format checks on a few stored items."""

    max_kld: float = Field(0.5, ge=0)  # mean KL divergence, nats per token
    min_same_top1: float = Field(0.6, ge=0, le=1)
    ctx: int = Field(128, ge=16)  # tokens per chunk; the second half of each is scored
    chunks: int = Field(3, ge=1)  # ctx × chunks tokens read, a few hundred
    text: str | None = None  # a UTF-8 file; default: the bundled fidelity text
    # a GGUF (the decision's reference) both versions are measured against instead: the new one
    # passes within the limits above or when no worse than the active one (× max_kld_ratio)
    reference: str | None = None
    max_kld_ratio: float = Field(1.25, ge=1)
    items: str | None = "demo"  # eval set (bundled name or JSONL) for the format checks
    n_items: int = Field(4, ge=0)  # 0: no format checks
    max_tokens: int = Field(48, ge=1)
    max_extra_format_errors: int = Field(0, ge=0)  # beyond the active version's on the same items
    canary: CanaryPolicy = Field(default_factory=CanaryPolicy)


class ProbeCheck(_Strict):
    name: str  # kld | same_top1 | format_errors
    value: float
    limit: float
    passed: bool
    detail: str = ""


class ProbeResult(_Strict):
    passed: bool
    against: str  # what the new version was compared with ("smollm2@q4" or a file)
    checks: list[ProbeCheck] = Field(default_factory=list)
    tokens: int = 0  # tokens scored for KLD and top-1
    seconds: float = 0.0
    when: str = ""

    def reason(self) -> str:
        bad = [c for c in self.checks if not c.passed]
        return "; ".join(f"{c.name} {c.value:.4g} beyond its limit {c.limit:.4g}"
                         + (f" ({c.detail})" if c.detail else "") for c in bad) or "passed"
