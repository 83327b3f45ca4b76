"""Speculative decoding per task for the recommended model, from its newest per-task measurement
(`edgepick speculate`, bench/speculation_stage.py). Seed 003 §2.3 names speculative sampling among
the ways to keep a device within budget; whether it pays depends on the text (extraction copies
spans of its prompt, open chat does not), so it is chosen task by task:

- a kind is chosen for a task when its speed-up's 95% interval lies wholly above 1 and it left
  every greedy answer unchanged; among several, the one with the highest lower bound;
- otherwise the task decodes plainly, and the reason is kept: `loses` (the interval lies below
  1), `undetermined` (it holds 1), `idle` (nothing was drafted), `changed` (a kind altered a
  greedy answer: speculation must not change text) or `unmeasured` (no figures for the task).

The choice reaches deploy.yaml by decide/speculation_deploy.py; the report shows it with every
kind's figures (report/speculation_section.py).
"""

from __future__ import annotations

import os

from edgepick.bench.speculation import figures, timing_agreement
from edgepick.bench.speculation_stage import KIND, SpeculationRecord
from edgepick.records.decision import CandidateSummary
from edgepick.records.speculative import SpecFigures, Speculation, SpeculationChoice, \
    TaskSpeculation
from edgepick.store.identity import file_sha256

# which reason speaks for a task's plain decoding when several kinds were measured on it
_PRECEDENCE = ("changed", "undetermined", "loses", "idle")


def latest_measurement(store, model: str) -> tuple[str, SpeculationRecord] | None:
    """The newest stored per-task measurement of the file `model` (by its content)."""
    if "://" in model or not os.path.isfile(model):
        return None
    sha, last = file_sha256(model), None
    for key, payload in store.items(KIND):
        if payload.get("model_sha256") == sha:
            last = key, payload
    if last is None:
        return None
    rec = SpeculationRecord.model_validate(last[1])
    if rec.requests:  # the figures as the current analysis makes them from the same requests
        rec = rec.model_copy(update={"figures": figures(rec.requests),
                                     "timing_gap": timing_agreement(rec.requests)})
    return last[0], rec


def _eligible(f: SpecFigures) -> bool:
    return f.verdict == "wins" and f.identical == f.items


def choose_task(task: str, figs: list[SpecFigures],
                kinds: dict[str, Speculation]) -> TaskSpeculation:
    """The kind for one task, or plain decoding and why (module docstring)."""
    if not figs:
        return TaskSpeculation(task=task, reason="unmeasured")
    wins = [f for f in figs if _eligible(f)]
    if wins:
        best = max(wins, key=lambda f: (f.speedup_low or 0.0, f.speedup or 0.0))
        return TaskSpeculation(task=task, chosen=kinds.get(best.setting), reason="wins",
                               figures=figs)
    reasons = {"changed" if f.identical < f.items else f.verdict for f in figs}
    why = next((r for r in _PRECEDENCE if r in reasons), "undetermined")
    return TaskSpeculation(task=task, reason=why, figures=figs)


def choose(rec: SpeculationRecord, key: str, candidate: str,
           tasks: list[str]) -> SpeculationChoice:
    """Per task of `tasks` (the scenario's, as the candidate was evaluated), the kind or none."""
    kinds = {}
    for k in rec.kinds:
        s = Speculation.model_validate(k)
        kinds[s.tag()] = s
    by_task: dict[str, list[SpecFigures]] = {}
    for f in rec.figures:
        by_task.setdefault(f.task, []).append(f)
    return SpeculationChoice(
        candidate=candidate, measured=key, engine=rec.engine, base=rec.base,
        timing_gap=rec.timing_gap,
        tasks=[choose_task(t, by_task.get(t, []), kinds) for t in tasks])


def speculation_choice(store, summary: CandidateSummary) -> SpeculationChoice | None:
    """The choice for the recommended candidate, None when its file was never measured."""
    found = latest_measurement(store, summary.model)
    if found is None:
        return None
    key, rec = found
    measured = sorted({f.task for f in rec.figures})
    tasks = sorted(summary.tasks) or measured
    choice = choose(rec, key, summary.candidate, tasks)
    differ = _settings_differ(rec.base, summary.settings or {})
    if differ:
        choice.note = ("measured under other settings than the candidate's ("
                       + ", ".join(differ) + ")")
    return choice


# settings that move decode speed: a measurement under others does not speak for the candidate
_SPEED_SETTINGS = ("threads", "n_batch", "n_ubatch", "kv_type", "flash_attn")


def _settings_differ(measured: dict, candidate: dict) -> list[str]:
    return [f"{k} {measured.get(k)} vs {candidate.get(k)}" for k in _SPEED_SETTINGS
            if k in measured and k in candidate and measured[k] != candidate[k]]
