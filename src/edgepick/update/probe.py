"""The probe a new version passes on the device before it serves (seed 001 §6.4: a file can be
intact and still be a bad model): the KL divergence and top-1 agreement of its next-token
distributions against the active version (or the deploy's `update.reference`) on a fixed text
of a few hundred tokens, by the fidelity machinery (evaluate/fidelity.py); and, with a deploy,
the format checks of a handful of stored eval items, the new version against the active one.

Limits come from deploy.yaml's `update:` section (records/update.py), with defaults.
"""

from __future__ import annotations

import time
from pathlib import Path

from edgepick.backends import get_backend
from edgepick.errors import EdgepickError
from edgepick.evaluate.eval_sets import DataSpec, load_sets
from edgepick.evaluate.fidelity import bundled_text, fidelity
from edgepick.evaluate.scorers import get_scorer
from edgepick.progress import ProgressEvent, Tick
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.model_ref import DEFAULT_ENGINE, ModelRef
from edgepick.records.update import ProbeCheck, ProbeResult, UpdatePolicy


def _format_errors(path: str, items: list, policy: UpdatePolicy, threads: int) -> int:
    """How many of the items the model at `path` answers without the form their task needs
    (greedy, `policy.max_tokens` tokens each)."""
    backend = get_backend(DEFAULT_ENGINE)
    backend.load(Candidate(ref=ModelRef.file(path),
                           settings=RuntimeSettings(threads=threads, n_ctx=1024)))
    try:
        bad = 0
        for it in items:
            g = backend.generate(it.chat_messages(), policy.max_tokens, chat=True)
            bad += not get_scorer(it.task).score(it, g.text).format_ok
        return bad
    finally:
        backend.unload()


def _items(policy: UpdatePolicy) -> list:
    if not policy.items or not policy.n_items:
        return []
    loaded = load_sets([DataSpec(set=policy.items, limit=policy.n_items)])
    return [it for it in loaded.items if not it.tools]


def probe(new: str | Path, against: str | Path, policy: UpdatePolicy | None = None, *,
          against_label: str = "", format_checks: bool = False, threads: int = 2,
          progress: Tick | None = None) -> ProbeResult:
    """Measure `new` against `against`; `passed` says whether every check held."""
    policy = policy or UpdatePolicy()
    started = time.monotonic()
    label = against_label or str(against)
    text = Path(policy.text) if policy.text else bundled_text("fidelity")

    def measure(ref: Path, cand: Path):
        return fidelity(ModelRef.file(ref), ModelRef.file(cand), text, ctx=policy.ctx,
                        threads=threads, max_chunks=policy.chunks, progress=progress)

    kld_limit, top1_limit, base_note = policy.max_kld, policy.min_same_top1, ""
    try:
        if policy.reference:  # both against the reference: the new one may not be worse
            ref = Path(policy.reference)
            label = f"{ref.name} (reference)"
            base = measure(ref, Path(against))
            kld_limit = max(kld_limit, base.kld_mean * policy.max_kld_ratio)
            top1_limit = min(top1_limit, base.same_top1)
            base_note = f"; the active version: {base.kld_mean:.3g}, top-1 {base.same_top1:.3g}"
        fid = measure(Path(policy.reference) if policy.reference else Path(against), Path(new))
    except EdgepickError as exc:  # another tokenizer, a file that does not load: a failed probe
        return ProbeResult(passed=False, against=label, checks=[
            ProbeCheck(name="fidelity", value=float("nan"), limit=0, passed=False,
                       detail=str(exc))], seconds=time.monotonic() - started, when=_now())
    checks = [
        ProbeCheck(name="kld", value=fid.kld_mean, limit=kld_limit,
                   passed=fid.kld_mean <= kld_limit,
                   detail=f"mean KL divergence ±{fid.kld_mean_unc:.2g}, p99 {fid.kld_p99:.3g}"
                          + base_note),
        ProbeCheck(name="same_top1", value=fid.same_top1, limit=top1_limit,
                   passed=fid.same_top1 >= top1_limit,
                   detail=f"top-1 agreement ±{fid.same_top1_unc:.2g}"),
    ]
    items = _items(policy) if format_checks else []
    if items:
        if progress:
            progress(ProgressEvent(0, 2, "format checks"))
        base_bad = _format_errors(str(against), items, policy, threads)
        new_bad = _format_errors(str(new), items, policy, threads)
        limit = base_bad + policy.max_extra_format_errors
        checks.append(ProbeCheck(name="format_errors", value=new_bad, limit=limit,
                                 passed=new_bad <= limit,
                                 detail=f"of {len(items)} items; the active version: {base_bad}"))
    return ProbeResult(passed=all(c.passed for c in checks), against=label,
                       checks=checks, tokens=fid.n_scored, seconds=time.monotonic() - started,
                       when=_now())


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
