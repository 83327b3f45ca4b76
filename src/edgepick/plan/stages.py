"""The local executor: each pipeline stage as a call, on this machine, of the stage's own entry
point `run(request, store, progress)` on the requests plan/requests.py builds (the Ray fleet
sends the same requests to its nodes). The stages own their store kinds and keys, so a rerun
measures nothing twice; this module runs the requests and records what to skip.

A stage whose module is not installed is skipped with a note ("stage not available"); nothing is
made up in its place.
"""

from __future__ import annotations

from typing import Callable

from edgepick.bench import runner as bench
from edgepick.convert import stage as convert
from edgepick.errors import EdgepickError
from edgepick.evaluate import fidelity_stage as fidelity, stage as evaluate
from edgepick.evaluate.savings import savings_lines
from edgepick.fit import stage as fit
from edgepick.fit.stage import FitRequest, FitTarget
from edgepick.plan.requests import bench_requests, convert_request, eval_request, fidelity_requests
from edgepick.plan.prune_section import prune_stage
from edgepick.plan.state import RunCandidate, RunState
from edgepick.progress import ProgressEvent, Tick
from edgepick.quantize import stage as quantize
from edgepick.quantize.stage import QuantizeBuild, QuantizeRequest
from edgepick.units import mib, whole_pct

__all__ = ["ON_DRIVER", "STAGES", "RunCandidate", "RunState", "enabled_stages"]


def fit_stage(st: RunState, tick: Tick) -> None:
    """Predict memory and speed; drop what cannot fit before spending time on it. Candidates
    with other runtime settings (the plan's runtime axes) are estimated with their own."""
    plan = st.lp.plan
    # a converted engine build has no GGUF header to estimate from: bench measures it
    todo = [c for c in st.candidates if not c.ref.is_endpoint and c.build is None
            and not c.skipped]
    if not todo:
        return tick(ProgressEvent(0, 0, "done"))
    groups: dict[str, list[RunCandidate]] = {}
    for c in todo:
        rt = st.settings(c)
        key = repr((_fit_settings(rt, FitRequest), rt.adapter, rt.speculative))
        groups.setdefault(key, []).append(c)
    for group in groups.values():
        rt = st.settings(group[0])
        adapter = rt.adapter.path if rt.adapter is not None else None
        draft = rt.speculative.model if rt.speculative is not None else None
        req = FitRequest(targets=[FitTarget(model=c.source or c.ref, quant=c.qtype,
                                            file=c.ref.path, label=c.name, adapter=adapter,
                                            variant=c.variant, draft=draft)
                                  for c in group],
                         ctxs=[rt.n_ctx], device=st.device, margin=plan.fit.margin,
                         **_fit_settings(rt, FitRequest))
        for c, est in zip(group, fit.run(req, st.store, tick)):
            _fit_verdict(st, c, est)


def _fit_settings(rt, request_cls) -> dict:
    """The runtime settings fit's request takes (those it models: the KV type, the
    micro-batch, mmap, the placement..., and whatever further ones fit's request learns to
    accept)."""
    names = ("kv_type", "n_ubatch", "swa_full", "mmap", "flash_attn", "n_batch", "threads",
             "placement")
    return {k: getattr(rt, k) for k in names if k in request_cls.model_fields}


def _fit_verdict(st: RunState, c: RunCandidate, est) -> None:
    plan = st.lp.plan
    if est.verdict == "no" and plan.fit.skip_no_fit:
        c.skipped = (f"does not fit: predicted {mib(est.total_bytes)} > "
                     f"{mib(est.budget_bytes)} budget of {st.device.name}")
        st.notes.append(f"fit: {c.name} skipped — {c.skipped}")
    elif est.verdict == "tight":
        st.notes.append(f"fit: {c.name} fits only without the {whole_pct(plan.fit.margin)} margin")


def quantize_stage(st: RunState, tick: Tick) -> None:
    todo = [c for c in st.active() if c.source]
    if not todo:
        return tick(ProgressEvent(0, 0, "done"))
    req = QuantizeRequest(threads=st.lp.plan.runtime.threads, builds=[
        QuantizeBuild(source=c.source, qtype=c.qtype, target=c.ref.path, imatrix=c.imatrix,
                      label=c.name) for c in todo])
    for c, res in zip(todo, quantize.run(req, st.store, tick)):
        if res.error:
            c.skipped = f"build failed: {res.error}"
            st.notes.append(f"quantize: {c.name} {c.skipped}")
        elif res.file.requantized:
            st.notes.append(f"quantize: {c.name} was built from an already quantized source; "
                            "requantizing compounds error")


def convert_stage(st: RunState, tick: Tick) -> None:
    """Build every planned conversion; a failed build skips its candidate, with the reason."""
    planned = convert_request(st)
    if planned is None:
        return tick(ProgressEvent(0, 0, "done"))
    todo, req = planned
    for c, res in zip(todo, convert.run(req, st.store, tick)):
        if res.error is not None:
            c.skipped = f"conversion failed: {res.error}"
            st.notes.append(f"convert: {c.name} {c.skipped}")
            continue
        for w in res.record.warnings:
            st.notes.append(f"convert: {c.name}: {w}")


def bench_stage(st: RunState, tick: Tick) -> None:
    requests = bench_requests(st)
    if not requests:
        return tick(ProgressEvent(0, 0, "done"))
    names = {(c.ref.spec, c.variant): c.name for c in st.active()}
    for req in requests:
        _bench_group(st, bench.run(req, st.store, tick), names)


def _bench_group(st: RunState, results, names: dict) -> None:
    for res in results:
        name = names.get((res.model, res.settings.get("variant")), res.model)
        if res.status != "ok":
            st.notes.append(f"bench: {name} {res.config} "
                            f"failed: {res.error}")
        elif res.contended and not res.cached:
            st.notes.append(f"bench: {name} {res.config} contended "
                            f"(other work {whole_pct(res.host_load.other_cpu_share)} of the CPUs)")
        rep = res.repetitions
        if res.status == "ok" and not res.cached and rep is not None and rep.stopped == "max":
            still = ", ".join(j.gate for j in rep.limits if j.verdict == "undetermined")
            st.notes.append(f"bench: {name} {res.config} ran the "
                            f"most repetitions ({rep.ran}, bench.max_repeats); {still} still "
                            "undetermined: its median sits on the limit")


def eval_stage(st: RunState, tick: Tick) -> None:
    req = eval_request(st)
    if req is None:
        return tick(ProgressEvent(0, 0, "done"))
    result = evaluate.run(req, st.store, tick)
    if result is None:
        st.notes.append("eval: the time budget ran out before the first item; quality unmeasured")
        return None
    for p in result.problems[:5]:
        st.notes.append(f"eval: skipped bad line — {p}")
    if result.sequential is not None:
        st.notes.extend(f"eval: {line}" for line in savings_lines(result))


def fidelity_stage(st: RunState, tick: Tick) -> None:
    if not any(c.reference or c.variant for c in st.active(local_only=True)):
        st.notes.append("fidelity: no candidate names a same-tokenizer reference; skipped")
    todo = fidelity_requests(st)
    for i, (c, req) in enumerate(todo):
        def step(ev: ProgressEvent, _i=i) -> None:
            tick(ProgressEvent(_i, len(todo), f"{ev.what} {ev.done}/{ev.total}"))

        tick(ProgressEvent(i, len(todo), c.name))
        if req.settings is None:
            fidelity.run(req, st.store, step)
            continue
        try:  # a runtime-axes comparison at the scenario's context: a text too short is a note
            fidelity.run(req, st.store, step)
        except EdgepickError as exc:
            st.notes.append(f"fidelity: {c.name} at ctx {req.ctx} not measured ({exc})")
    tick(ProgressEvent(len(todo), len(todo), "done"))


Stage = tuple[str, Callable[[RunState, Tick], None], str]  # name, the call, its stage module

# The pipeline's stages in order: the local executor (plan/runner.py) and the farm
# (cluster/fleet.py) both run this list, so a stage added here runs under either.
STAGES: list[Stage] = [
    # first: a pruned source is written (its blocks ranked) before fit reads its header
    ("prune", prune_stage, "edgepick.prune.stage"),
    ("fit", fit_stage, "edgepick.fit.stage"),
    ("quantize", quantize_stage, "edgepick.quantize.stage"),
    ("convert", convert_stage, "edgepick.convert.stage"),
    ("bench", bench_stage, "edgepick.bench.runner"),
    ("eval", eval_stage, "edgepick.evaluate.stage"),
    ("fidelity", fidelity_stage, "edgepick.evaluate.fidelity_stage"),
]

# The stages the farm runs on its driver, per device, before any job: they decide what is
# measured where (fit: what cannot fit a device is not measured there) and make the files the
# jobs measure (prune, quantize, convert: made once, at paths every node reads). The others
# become jobs on the devices (cluster/planjobs.py).
ON_DRIVER = frozenset({"prune", "fit", "quantize", "convert"})


def enabled_stages(plan, stages: list[Stage] | None = None) -> list[Stage]:
    """The stages `plan` runs, in pipeline order."""
    enabled = {"prune": any(q.prune != [0] for q in plan.quantize),
               "fit": True, "quantize": bool(plan.quantize), "convert": bool(plan.convert),
               "bench": plan.bench.enabled, "eval": plan.eval.enabled,
               "fidelity": plan.fidelity.enabled}
    return [s for s in (STAGES if stages is None else stages) if enabled[s[0]]]
