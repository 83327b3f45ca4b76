"""Which `edgepick doctor` command to run when a live figure degrades: each figure
monitor checks maps to the symptom it shows, and so to the checks that find its cause."""

from __future__ import annotations

import shlex

# A figure's name starts with one of these (monitor/live.py and monitor/drift.py names).
SYMPTOM_OF = (
    ("TTFT", "slow-first-token"),
    ("decode tok/s", "slow"),
    ("hottest temperature", "slow"),
    ("device power", "slow"),
    ("peak engine memory", "memory-growth"),
    ("engine memory", "memory-growth"),
    ("OOM kills", "oom"),
    ("engine crashes", "oom"),
    ("crash rate", "oom"),
    ("engine killed", "oom"),
    ("unacceptable", "garbled"),
    ("format errors", "tool-calls"),
    ("badcases", "garbled"),
    ("prompt tokens", "context-overflow"),
    ("answer tokens", "context-overflow"),
    ("unacceptable rate", "garbled"),
)


def symptom_of(figure: str) -> str | None:
    for prefix, symptom in SYMPTOM_OF:
        if figure.startswith(prefix):
            return symptom
    return None


def doctor_commands(worse: list[str], deploy: str | None) -> list[str]:
    """One command per symptom among the degraded figures, in the order they were found."""
    target = deploy or "DEPLOY.yaml"
    out: list[str] = []
    for figure in worse:
        s = symptom_of(figure)
        cmd = shlex.join(["edgepick", "doctor", target, "--symptom", s]) if s else None
        if cmd and cmd not in out:
            out.append(cmd)
    return out
