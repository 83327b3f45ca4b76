"""Which checks run for a symptom, most likely cause first (the seeds' troubleshooting orders:
seed 001 §5.2 back to front, seed 004 §6.1 memory before format), and the quick health checks
run when no symptom is given (docs/doctor.md maps every seed table row to one of these)."""

from __future__ import annotations

from edgepick.doctor import checks_file as f
from edgepick.doctor import checks_fidelity as q
from edgepick.doctor import checks_memory as m
from edgepick.doctor import checks_output as o
from edgepick.doctor import checks_speculation as sp
from edgepick.doctor import checks_speed as s
from edgepick.doctor.checks import Check

CHECKS = {c.name: c for c in (
    Check("file_integrity", "file_integrity", f.file_integrity, 2),
    Check("engine_support", "engine_support", f.engine_support, 1),
    Check("chat_template", "chat_template", f.chat_template, 20),
    Check("context_overflow", "context_overflow", o.context_overflow, 5),
    Check("sampling", "sampling", o.sampling, 25),
    Check("tool_schema", "tool_schema", o.tool_schema, 20, needs_file=False),
    Check("kv_cache_type", "kv_cache_type", q.kv_cache_type, 45),
    Check("quantization", "quantization", q.quantization, 90),
    Check("conversion", "conversion", q.conversion, 40),
    Check("memory_budget", "memory_budget", m.memory_budget, 15),
    Check("memory_growth", "memory_growth", m.memory_growth, 20, needs_file=False),
    Check("thermal_throttling", "thermal_throttling", s.thermal_throttling, 20),
    Check("host_load", "host_load", s.host_load, 5, needs_file=False),
    Check("cold_start", "cold_start", s.cold_start, 10),
    # skipped at once when the target does not speculate
    Check("speculation", "speculation", sp.speculation, 60),
)}

# Post-processing and input before the execution path and the weights (seed 001 §5.2).
BY_SYMPTOM = {
    "garbled": ("file_integrity", "chat_template", "sampling", "context_overflow",
                "kv_cache_type", "quantization", "conversion"),
    "repetition": ("chat_template", "sampling", "kv_cache_type", "quantization"),
    "slow": ("host_load", "speculation", "thermal_throttling", "memory_budget",
             "kv_cache_type"),
    "slow-first-token": ("cold_start", "host_load", "context_overflow"),
    "oom": ("memory_budget", "memory_growth", "context_overflow"),
    "load-failure": ("memory_budget", "file_integrity", "engine_support"),
    "memory-growth": ("memory_growth", "memory_budget"),
    "tool-calls": ("tool_schema", "chat_template", "sampling"),
    "context-overflow": ("context_overflow", "memory_budget"),
    "mismatch": ("chat_template", "conversion", "quantization", "kv_cache_type"),
}
# No symptom: every check that is cheap on a deploy (< 3 min on 2 cores,
# benchmarks/doctor_quick.py).
# host_load early: it is cheap, its engine serves the checks after it, and a busy host makes
# the rest slow enough to run out of time before it.
QUICK = ("file_integrity", "engine_support", "memory_budget", "host_load", "chat_template",
         "context_overflow", "sampling", "kv_cache_type", "tool_schema", "quantization",
         "memory_growth", "thermal_throttling")
# A finding here makes every later check meaningless: the model does not load.
BLOCKING = {"file_integrity", "engine_support"}
STOP_CONFIDENCE = 0.8  # with a symptom, stop once a cause explains it this clearly


def plan(symptom: str | None) -> list[Check]:
    return [CHECKS[n] for n in (BY_SYMPTOM[symptom] if symptom else QUICK)]
