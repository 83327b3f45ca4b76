"""What doctor reports: a finding names one cause from a fixed vocabulary, the figures measured
in this run that show it (each with the command that reproduces it), the change that removes it
and how clearly the differential separated it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# The cause vocabulary (docs/doctor.md): each is shown by changing one axis against a baseline.
Cause = Literal["quantization", "kv_cache_type", "sampling", "chat_template", "context_overflow",
                "host_load", "thermal_throttling", "memory_budget", "memory_growth",
                "engine_support", "file_integrity", "cold_start", "conversion", "tool_schema",
                "speculation"]
CAUSES: tuple[str, ...] = Cause.__args__  # type: ignore[attr-defined]
SYMPTOMS = ("garbled", "repetition", "slow", "slow-first-token", "oom", "load-failure",
            "memory-growth", "tool-calls", "context-overflow", "mismatch")
# The symptom a cause shows as, when doctor found it without being told one.
SHOWS_AS = {"quantization": "garbled", "kv_cache_type": "garbled", "sampling": "garbled",
            "chat_template": "garbled", "context_overflow": "context-overflow",
            "host_load": "slow", "thermal_throttling": "slow", "memory_budget": "oom",
            "memory_growth": "memory-growth", "engine_support": "load-failure",
            "file_integrity": "load-failure", "cold_start": "slow-first-token",
            "conversion": "mismatch", "tool_schema": "tool-calls", "speculation": "slow"}
# Ties in confidence go to what stops everything else first: a file that cannot load explains
# any symptom; a busy host explains only speed.
PRIORITY = {c: i for i, c in enumerate((
    "file_integrity", "engine_support", "memory_budget", "chat_template", "context_overflow",
    "sampling", "kv_cache_type", "quantization", "conversion", "tool_schema", "memory_growth",
    "host_load", "speculation", "thermal_throttling", "cold_start"))}


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(_Data):
    """One figure measured in this run, beside its known-good baseline when there is one."""

    what: str
    value: Any = None
    baseline: Any = None  # the same figure with the one axis changed back to known-good
    limit: Any = None  # the threshold the figure is judged against (not a measured figure)
    unit: str = ""
    command: str | None = None  # reproduces the figure


class Fix(_Data):
    text: str  # what to change, in a sentence
    command: str | None = None  # a command to run
    deploy_edit: dict[str, Any] = Field(default_factory=dict)  # dotted deploy.yaml key -> value
    verified: str | None = None  # the figure after the fix, when doctor measured it


class Finding(_Data):
    symptom: str
    cause: Cause
    detail: str | None = None  # e.g. the tensor class or block, the process, the argument
    summary: str  # one line: what was measured against what
    evidence: list[Evidence] = Field(default_factory=list)
    fix: Fix
    confidence: float = Field(ge=0, le=1)  # how clearly the differential separated this cause
    check: str  # the check that found it


class CheckRun(_Data):
    """What one check did: found something, found nothing, or could not run (and why)."""

    check: str
    cause: Cause
    status: Literal["finding", "clear", "skipped", "error"]
    seconds: float = 0.0
    note: str = ""
    reused: bool = False  # its figures came from the results store


class DoctorReport(_Data):
    target: str
    kind: Literal["gguf", "deploy", "url", "remote"]  # remote: its header only (doctor/remote.py)
    model: str | None = None
    symptom: str | None = None  # None: the quick health checks
    budget_s: float
    elapsed_s: float = 0.0
    stopped: str | None = None  # why doctor stopped before its plan's end
    findings: list[Finding] = Field(default_factory=list)
    checks: list[CheckRun] = Field(default_factory=list)
    created: float | None = None


# Without a symptom, findings explain different things: what stops the model from loading
# first, then what spoils its answers, then what slows it down, and last the host around it
# (other work is the environment's, not the deployment's).
TIER = {**{c: 0 for c in ("file_integrity", "engine_support", "memory_budget")},
        **{c: 1 for c in ("chat_template", "context_overflow", "sampling", "kv_cache_type",
                          "quantization", "conversion", "tool_schema")},
        **{c: 2 for c in ("memory_growth", "thermal_throttling", "cold_start")},
        "host_load": 3}


def ranked(findings: list[Finding], symptom: str | None = None) -> list[Finding]:
    """Most likely first. For a symptom: confidence (to one decimal), then the cause that
    blocks the most; for the quick checks: the tier, then confidence."""
    if symptom is None:
        return sorted(findings, key=lambda f: (TIER[f.cause], -round(f.confidence, 1),
                                               PRIORITY[f.cause]))
    return sorted(findings, key=lambda f: (-round(f.confidence, 1), PRIORITY[f.cause]))
