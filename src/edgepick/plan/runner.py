"""`edgepick run PLAN`: fit → quantize → bench → eval → fidelity → decide → report, with one
progress display (an overall bar and one bar per stage) drawn by the caller's `RunDisplay`."""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from edgepick.backends.registry import backend_class
from edgepick.clock import now
from edgepick.convert.plan_section import convert_candidates
from edgepick.decide.stage import run as run_stage
from edgepick.devices.catalog import load_device
from edgepick.devices.local import describe, local_device
from edgepick.errors import EdgepickError, InputError
from edgepick.models.adapter import read_adapter
from edgepick.models.draft_vocab import draft_mismatch
from edgepick.models.quant_types import normalize_ftype
from edgepick.models.spec import ref_spec
from edgepick.plan.loader import LoadedPlan
from edgepick.plan.prune_section import prune_cuts
from edgepick.plan.requests import decide_request
from edgepick.plan.runtime_axes import check_grid, combinations, statement, unhonoured
from edgepick.plan.stages import STAGES, RunCandidate, RunState, enabled_stages
from edgepick.progress import QuietDisplay, RunDisplay
from edgepick.quantize.ladder import output_path
from edgepick.records.candidate import AdapterSetting
from edgepick.records.decision import CandidateSummary, Decision
from edgepick.records.model_ref import ModelRef
from edgepick.records.placement import HALF
from edgepick.store import ResultStore
from edgepick.store.identity import file_sha256


@dataclass
class RunResult:
    decision: Decision
    summaries: list[CandidateSummary]
    reports: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    store: Path | None = None
    run_id: int | None = None
    deploy: Path | None = None  # the deploy.yaml written for the recommendation


def plan_candidates(lp: LoadedPlan) -> list[RunCandidate]:
    """The plan's candidates (models resolved once, by the loader) and its quant builds, each
    given the path it will be written to."""
    plan = lp.plan
    out: list[RunCandidate] = []
    for i, c in enumerate(plan.candidates):
        ref = lp.ref(c.model, c.backend)
        out.append(RunCandidate(name=c.label or ref.label, ref=ref,
                                reference=lp.ref(c.reference) if c.reference else None,
                                device=c.device, settings=_with_adapter(lp, i, c, ref)))
    models_dir = lp.output / "models"
    for q in plan.quantize:
        src = lp.ref(q.source)
        prefix = q.label or src.label
        for cut in prune_cuts(lp, q, src, models_dir):  # None: the source as it is
            base = src if cut is None else cut.ref
            for t in q.types:
                ftype = normalize_ftype(t)
                name = f"{prefix}-{ftype}" if cut is None else f"{prefix}-{cut.tag}-{ftype}"
                target = ModelRef.file(output_path(str(base.path), ftype, models_dir),
                                       label=name)
                out.append(RunCandidate(
                    name=name, ref=target, reference=lp.ref(q.reference) if q.reference else src,
                    source=base, qtype=ftype, prune=cut,
                    imatrix=lp.resolve(q.imatrix) if q.imatrix else None))

    out.extend(convert_candidates(lp, RunCandidate))
    out = settings_candidates(lp, out)
    seen: dict[str, int] = {}
    for c in out:  # two entries with one name would merge in the report: keep them apart
        seen[c.name] = seen.get(c.name, 0) + 1
        if seen[c.name] > 1:
            c.name = f"{c.name}#{seen[c.name]}"
    return out


def _with_adapter(lp: LoadedPlan, i: int, entry, ref):
    """The plan's runtime plus the entry's adapter, checked against the model the way llama.cpp
    checks it; None without an adapter. An engine that does not load adapters refuses it."""
    if not entry.adapter:
        return None

    if "adapter" not in backend_class(ref.backend).honoured_settings:
        raise InputError(lp.path, f"engine '{ref.backend}' does not load adapters",
                         field=f"candidates.{i}.adapter")
    path = lp.resolve(entry.adapter)
    try:
        read_adapter(path, None if ref.is_endpoint else ref.path)
    except InputError as exc:
        raise InputError(lp.path, exc.problem + f" ({path})",
                         field=f"candidates.{i}.adapter") from None
    adapter = AdapterSetting(path=path, sha256=file_sha256(path), scale=entry.adapter_scale)
    # a variant of its own: the same file with and without the adapter are two candidates
    variant = f"lora={Path(path).stem}" + (f",scale={entry.adapter_scale:g}"
                                           if entry.adapter_scale != 1.0 else "")
    return lp.plan.runtime.model_copy(update={"adapter": adapter, "variant": variant})


def settings_candidates(lp: LoadedPlan, models: list[RunCandidate]) -> list[RunCandidate]:
    """Each model once per combination of the plan's runtime axes, named `model@kv=q8_0,fa=on`
    (plan/runtime_axes.py); the models as they are when the plan lists no alternatives. A grid
    over the plan's cap without `run --yes`, or an axis an engine does not apply, is refused in
    one line; a combination an engine cannot run at all is kept, unmeasured, with its reason."""
    axes = lp.plan.runtime_axes
    combos = [with_draft(lp, rt) for rt in combinations(lp.plan.runtime, axes)]
    if len(combos) == 1 and combos[0].speculative is None and combos[0].placement is None:
        return models
    check_grid(axes, len(models), lp.yes)
    out = []
    for m in models:
        why = unhonoured(m.ref.backend, axes, lp.plan.runtime)
        if why:
            raise EdgepickError(f"{lp.path}: {m.name}: {why}")
        for rt in combos:
            c = copy.copy(m)
            if m.settings is not None and m.settings.adapter is not None:
                rt = rt.model_copy(update={"adapter": m.settings.adapter,
                                           "variant": f"{rt.variant},{m.settings.variant}"})
            if rt.variant is not None:
                c.name = f"{m.name}@{rt.variant}"
            rt, unplaced = placed_for(m, rt)
            c.settings = rt
            problem = unplaced or backend_class(m.ref.backend).settings_problem(rt) \
                or draft_problem(m.ref, rt)
            if problem and not c.skipped:
                c.skipped = f"cannot run with {rt.variant or 'these settings'}: {problem}"
            out.append(c)
    return out


def with_draft(lp: LoadedPlan, rt):
    """`rt` with its draft model's path resolved against the plan and its content hashed (the
    draft's content, not its path, enters stored keys); `rt` itself without a draft."""
    spec = rt.speculative
    if spec is None or not spec.model:
        return rt
    path = lp.resolve(spec.model)
    if not os.path.isfile(path):  # a bundled name (smollm2) or a model the plan resolves
        try:
            path = lp.ref(spec.model).path or path
        except EdgepickError:
            pass
    sha = file_sha256(path) if os.path.isfile(path) else None
    return rt.model_copy(update={"speculative": spec.model_copy(
        update={"model": path, "sha256": sha})})


def placed_for(m: RunCandidate, rt):
    """(`rt` with `n_gpu_layers: half` as half of this model's repeating layers, read from its
    GGUF's block count; None) or (`rt`, why it cannot be read)."""
    if rt.placement is None or rt.placement.n_gpu_layers != HALF:
        return rt, None
    try:
        n_layer = ref_spec(m.source or m.ref).n_layers
    except (EdgepickError, OSError) as exc:
        return rt, f"n_gpu_layers half: the model's layers cannot be read ({exc})"
    return rt.model_copy(update={"placement": rt.placement.resolved(n_layer)}), None


def draft_problem(ref, rt) -> str | None:
    """Why `rt`'s draft model cannot speculate for the model `ref`, in one line naming both
    files; None without a draft or when the two share a vocabulary."""
    spec = rt.speculative
    if spec is None or not spec.model or ref.is_endpoint:
        return None
    if not os.path.isfile(spec.model):
        return f"draft {spec.model}: no such file"
    try:
        return draft_mismatch(ref.path, spec.model)
    except EdgepickError as exc:
        return str(exc)


def _available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def run_plan(lp: LoadedPlan, display: RunDisplay | None = None,
             budget_s: float | None = None) -> RunResult:
    """`budget_s` (`run --budget`): the run's time; eval spends what the stages before it left
    on the least settled cells first, and a stage that would start after it is skipped.
    `display` shows the bars and lines (the CLI's; none: nothing is shown)."""
    started = now()

    plan = lp.plan
    display = display or QuietDisplay()
    candidates = plan_candidates(lp)  # a refused runtime grid stops here, before any work
    say_grid(lp, candidates, display.say)
    if plan.device == "local":  # the cached probe; the engine is never re-probed here
        device = local_device(notify=lambda m: display.say(f"{m}…"))
        display.say(f"device local: {describe(device)}")
    else:
        device = load_device(plan.device if not os.path.isfile(lp.resolve(plan.device))
                             else lp.resolve(plan.device))
    lp.output.mkdir(parents=True, exist_ok=True)
    store = ResultStore(lp.store_path)
    run_id = store.begin_run(f"edgepick run {lp.path}", plan.model_dump(mode="json"),
                             data_sha256=_data_sha(lp))
    st = RunState(lp=lp, store=store, device=device, candidates=candidates,
                  deadline=None if budget_s is None else started + budget_s)
    steps = enabled_stages(plan, STAGES)
    try:
        with display.bars(len(steps) + 2) as bars:
            for name, fn, module in steps:
                bars.overall(name)
                if st.deadline is not None and now() >= st.deadline:
                    st.notes.append(f"{name}: skipped, the time budget is spent")
                    bars.overall(name, advance=1)
                    continue
                if not _available(module):
                    st.notes.append(f"{name}: stage not available (module {module} is not "
                                    "installed); skipped, nothing was estimated in its place")
                    bars.overall(name, advance=1)
                    continue
                fn(st, bars.stage(name))
                bars.overall(name, advance=1)
            bars.overall("decide")
            rec = _decide(st, run_id, lambda ev: bars.overall(ev.what))
            bars.overall("decide", advance=2)
    finally:
        store.close()
    st.notes += rec.notes
    return RunResult(decision=rec.decision, summaries=rec.summaries,
                     reports=[Path(p) for p in rec.reports], notes=st.notes, store=lp.store_path,
                     run_id=run_id, deploy=Path(rec.deploy) if rec.deploy else None)


def say_grid(lp: LoadedPlan, candidates: list[RunCandidate],
             say: Callable[[str], None]) -> None:
    """Before any work: with runtime axes, how many candidates and roughly how long, and
    which combinations will not be measured."""
    axes = lp.plan.runtime_axes
    if axes is None or axes.count() < 2:
        return
    line = statement(len(candidates), axes.count(), None, "a stated rough figure for a "
                     "small model; larger models take longer")
    say(line)
    for c in candidates:
        if c.skipped and c.variant:
            say(f"  {c.name}: not measured — {c.skipped}")


def _decide(st: RunState, run_id: int, progress):
    """The decide stage over this run's rows: decision stored, `<output>/deploy.yaml` (none:
    nothing to deploy, said in notes) and the report."""
    return run_stage(decide_request(st, run_id), st.store, progress)


def _data_sha(lp: LoadedPlan) -> str | None:
    if not lp.plan.eval.enabled:
        return None
    shas = [file_sha256(s.set) for s in lp.eval_specs()]
    return shas[0] if len(shas) == 1 else hashlib.sha256(" ".join(shas).encode()).hexdigest()
