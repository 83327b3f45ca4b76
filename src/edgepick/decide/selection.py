"""Which stored rows a decision reads: the latest run by default, or the runs named with --run.

By default the candidates are those of the latest run that measured any, and each of their
figures comes from the latest run that measured it (so `fit`, `bench`, `eval` and `fidelity` run
one by one combine, and a re-run replaces, never mixes with, an earlier one). Named runs are
combined on purpose, and rows for one candidate measured under different settings in two of
them are an error naming both runs (docs/decide.md; seed 000 §3.4: compare only what was measured
with the same quantization, context, batch and threads).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from edgepick.decide import adapters
from edgepick.errors import EdgepickError
from edgepick.records.decision import CandidateSummary
from edgepick.records.evaluation import EvalResult


def model_key(model: str) -> str:
    return model if "://" in model else os.path.realpath(model)


VARIANT_SEP = "@@"  # a runtime-axes candidate's key: the model's, then its settings' name


def candidate_key(model: str, variant: str | None = None) -> str:
    """One candidate's identity across the stores: the model's, and for a candidate of a plan's
    runtime axes (RuntimeSettings.variant) its settings' name, so each combination of one file
    is a candidate of its own."""
    k = model_key(model)
    return f"{k}{VARIANT_SEP}{variant}" if variant else k


def split_key(key: str) -> tuple[str, str | None]:
    """(model, variant) of a candidate key, or of a plain model locator (variant None)."""
    model, sep, variant = key.rpartition(VARIANT_SEP)
    return (model, variant) if sep else (key, None)


@dataclass
class Row:
    kind: str
    key: str
    payload: dict[str, Any]
    runs: list[int]
    models: dict[str, str] = field(default_factory=dict)  # model key -> the name it was given
    record: BaseModel | None = None  # the payload as its stage's record (adapters.read_row)


@dataclass
class Selection:
    rows: list[Row]  # in the order they were stored
    allowed: dict[tuple[str, str], set[str]]  # (kind, row key) -> model keys it may fill
    runs: dict[str, list[int]]  # kind -> runs the figures come from
    notes: dict[str, list[str]] = field(default_factory=dict)  # model key -> what was combined

    def permits(self, row: Row, model: str, variant: str | None = None) -> bool:
        return candidate_key(model, variant) in self.allowed.get((row.kind, row.key), set())


def _models_of(kind: str, record: BaseModel) -> dict[str, str]:
    """The candidates a payload holds figures for, found by the kind's own adapter."""
    seen: dict[str, str] = {}

    def get(model: str, name: str | None = None, backend: str | None = None,
            variant: str | None = None, **_):
        seen.setdefault(candidate_key(model, variant), name or "")
        return CandidateSummary(candidate=name or model, model=model)

    adapters.ADAPTERS[kind](record, get)
    return seen


def _eval_settings(r: EvalResult, model: str) -> dict:
    for ce in r.candidates:
        if candidate_key(ce.candidate.model, ce.candidate.settings.variant) == model:
            return ce.candidate.settings.model_dump(mode="json")
    return {}


def _fields(record: BaseModel, names: tuple[str, ...]) -> dict:
    return {k: getattr(record, k, None) for k in names}


def signature(kind: str, record: BaseModel, model: str) -> dict:
    """The settings a figure depends on; two rows of one candidate that differ here measured
    different things."""
    if kind == "bench":
        return {k: record.settings.get(k) for k in ("n_ctx", "threads", "kv_type", "n_batch",
                                                    "n_ubatch", "flash_attn", "backend")}
    if kind == "eval":
        return {"data": record.data_sha256, "items": record.n_items,
                "reference": record.reference.candidate.model, "max_tokens": record.max_tokens,
                "settings": _eval_settings(record, model)}
    if kind == "fidelity":
        return _fields(record, ("reference", "text_sha256", "ctx", "n_chunks"))
    if kind == "fit":
        return _fields(record, ("ctx", "kv_type", "device", "margin", "quant"))
    return _fields(record, ("type", "source_sha256", "imatrix"))


def _differences(a: dict, b: dict) -> str:
    parts = [f"{k} {a.get(k)!r} vs {b.get(k)!r}" for k in a if a.get(k) != b.get(k)]
    return ", ".join(parts)[:200]


def _within_run_notes(sel: Selection) -> Selection:
    """One run that measured a candidate under several settings (a thread sweep, several fit
    contexts) is kept, but said: the summary's figures are the last setting's."""
    sigs: dict[tuple[str, str], list[dict]] = {}
    for r in sel.rows:
        for m in sel.allowed.get((r.kind, r.key), set()):
            sig = signature(r.kind, r.record, m)
            if sig not in sigs.setdefault((r.kind, m), []):
                sigs[(r.kind, m)].append(sig)
    for (kind, m), found in sigs.items():
        if len(found) > 1:
            sel.notes.setdefault(m, []).append(
                f"{kind}: measured under {len(found)} settings in one run "
                f"({_differences(found[0], found[-1])}); figures are the last one's")
    return sel


def _check_combined(rows: list[Row], runs: list[int]) -> None:
    sigs: dict[tuple[str, str], dict[int, list[dict]]] = {}
    for r in rows:
        for m in r.models:
            for rid in r.runs:
                if rid in runs:
                    sig = signature(r.kind, r.record, m)
                    per = sigs.setdefault((r.kind, m), {}).setdefault(rid, [])
                    if sig not in per:
                        per.append(sig)
    for (kind, model), per_run in sigs.items():
        ids = sorted(per_run)
        for i, r1 in enumerate(ids):
            for r2 in ids[i + 1:]:
                a, b = per_run[r1], per_run[r2]
                if sorted(map(repr, a)) != sorted(map(repr, b)):
                    diff = _differences(a[0], b[0]) or "a different set of settings"
                    raise EdgepickError(
                        f"{kind} of {os.path.basename(model)}: run {r1} and run {r2} measured it "
                        f"under different settings ({diff}); combine only runs measured alike, "
                        f"or pick one with --run")


def select(store, runs: list[int] | None = None) -> Selection:
    """The rows to decide on; `runs` None means the latest run (see the module's text)."""
    rows: list[Row] = []
    for kind in adapters.ADAPTERS:
        for key, payload, owners in store.rows_with_runs(kind):
            record = adapters.read_row(kind, payload)
            if record is not None:  # a row that is not its stage's record holds no figures
                rows.append(Row(kind, key, payload, owners, _models_of(kind, record), record))
    allowed: dict[tuple[str, str], set[str]] = {}
    used: dict[str, set[int]] = {}
    if runs:
        unknown = sorted(set(runs) - store.run_ids())
        if unknown:
            raise EdgepickError(f"{store.path}: no run {unknown[0]} (see `edgepick runs`)")
        chosen = [r for r in rows if set(r.runs) & set(runs)]
        _check_combined(chosen, runs)
        for r in chosen:
            allowed[(r.kind, r.key)] = set(r.models)
            used.setdefault(r.kind, set()).update(set(r.runs) & set(runs))
        return _within_run_notes(Selection(chosen, allowed,
                                           {k: sorted(v) for k, v in used.items()}))
    latest = max((rid for r in rows if r.models for rid in r.runs), default=None)
    if latest is None:
        return Selection([], {}, {})
    wanted = {m for r in rows if latest in r.runs for m in r.models}
    newest: dict[tuple[str, str], int] = {}  # (kind, model) -> the latest run that measured it
    for r in rows:
        for m in set(r.models) & wanted:
            newest[(r.kind, m)] = max([newest.get((r.kind, m), 0), *r.runs])
    chosen = []
    for r in rows:
        ok = {m for m in set(r.models) & wanted if newest[(r.kind, m)] in r.runs}
        if ok:
            chosen.append(r)
            allowed[(r.kind, r.key)] = ok
            used.setdefault(r.kind, set()).update(newest[(r.kind, m)] for m in ok)
    return _within_run_notes(Selection(chosen, allowed, {k: sorted(v) for k, v in used.items()}))
