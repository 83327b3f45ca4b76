"""One `CandidateSummary` per candidate, assembled from what the other stages stored.

Thin adapters over the store kinds: "eval" (EvalResult), "bench" (bench results), "fidelity",
"fit" and "quantize". Candidates are matched across kinds by model identity (resolved file path or
URL). A figure no stage stored stays None: the decision and the report say "not measured".
"""

from __future__ import annotations

import os
from typing import Iterable

from edgepick.convert.facts import folder_facts
from edgepick.decide import adapters
from edgepick.decide.selection import (VARIANT_SEP, Selection, candidate_key, model_key,
                                       select, split_key)
from edgepick.models.spec import spec_of
from edgepick.prune.build import facts as prune_facts
from edgepick.records.decision import CandidateSummary
from edgepick.records.model_ref import DEFAULT_ENGINE
from edgepick.store import ResultStore


def _file_facts(s: CandidateSummary) -> None:
    """Params, quant and exact weights bytes from the GGUF header (no weights are loaded)."""
    if "://" not in s.model and os.path.isdir(s.model):  # an engine folder (docs/engines.md)
        return folder_facts(s)
    if "://" in s.model or not os.path.isfile(s.model):
        return
    try:
        spec = spec_of(s.model)
    except Exception as exc:  # noqa: BLE001 - a bad header is a note, not a crash of the report
        s.notes.append(f"header unreadable: {exc}")
        return
    s.params = s.params or spec.n_params
    s.weights_bytes = s.weights_bytes or spec.weights_bytes
    s.quant = s.quant or spec.file_type
    s.pruned = s.pruned or prune_facts(s.model)


def build_summaries(store: ResultStore, models: Iterable[str] | None = None,
                    names: dict[str, str] | None = None,
                    selection: Selection | None = None) -> list[CandidateSummary]:
    """The selected candidates (or only `models`), in first-seen order.

    `names` maps a model path to the display name a plan gave it. `selection` says which runs'
    rows are read (decide/selection.py); by default the latest run's.
    """
    selection = selection if selection is not None else select(store)
    wanted = {candidate_key(*split_key(m)) for m in models} if models is not None else None
    rows: dict[str, CandidateSummary] = {}
    named: set[str] = set()
    # candidates of a plan's runtime axes: a row that names no settings (fit's, quantize's)
    # fills the one its label names, or none (a swept file has no candidate of its own)
    known = set(wanted or ()) | {k for r in selection.rows for k in r.models}
    measured = wanted if wanted is not None else \
        {k for r in selection.rows if r.kind not in ("fit", "quantize") for k in r.models}

    def resolve(model: str, variant: str | None, label: str | None) -> str | None:
        k = candidate_key(model, variant)
        if variant is not None:
            return k
        if label and "@" in label and candidate_key(model, label.rpartition("@")[2]) in known:
            return candidate_key(model, label.rpartition("@")[2])
        swept = any(x.startswith(k + VARIANT_SEP) for x in known)
        return None if swept and k not in measured else k

    def get(model: str, name: str | None, backend: str | None = None,
            variant: str | None = None, label: str | None = None) -> CandidateSummary | None:
        k = resolve(model, variant, label or name)
        if k is None or (wanted is not None and k not in wanted):
            return None
        given = (names or {}).get(k) if variant or k != model_key(model) \
            else (names or {}).get(model) or (names or {}).get(k)
        if k not in rows:
            label = given or name or os.path.basename(model.rstrip("/")) or model
            if k != model_key(model) and not (given or name):
                label += "@" + split_key(k)[1]
            rows[k] = CandidateSummary(candidate=label, model=model,
                                       backend=backend or DEFAULT_ENGINE)
            if k != model_key(model):  # a runtime-axes candidate says its settings, measured or not
                rows[k].settings = {"variant": split_key(k)[1]}
            if given or name:
                named.add(k)
        elif name and k not in named:  # a stage that knows the candidate's label names it
            rows[k].candidate = name
            named.add(k)
        if backend:
            rows[k].backend = backend
        return rows[k]

    if models is not None:  # plan order first, so the report's columns follow the plan
        for m in models:
            model, variant = split_key(m)
            get(model, None, variant=variant)
    for row in selection.rows:
        def row_get(model: str, *args, _row=row, **kw) -> CandidateSummary | None:
            ok = selection.permits(_row, model, kw.get("variant"))
            return get(model, *args, **kw) if ok else None

        adapters.ADAPTERS[row.kind](row.record, row_get)
    out = list(rows.values())
    for k, s in rows.items():
        s.notes.extend(selection.notes.get(k, []))
        _file_facts(s)
    return out
