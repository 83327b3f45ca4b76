"""Each pipeline stage as a thin call of the stage's own entry point, `run(request, store,
progress)`, over the run's state. The stages own their store kinds and keys, so a rerun measures
nothing twice; this module only turns the plan into requests and records what to skip.

A stage whose module is not installed is skipped with a note ("stage not available"); nothing is
made up in its place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from edgepick.progress import ProgressEvent, Tick
from edgepick.records.candidate import Candidate
from edgepick.records.model_ref import ModelRef
from edgepick.units import mib, whole_pct


@dataclass
class RunCandidate:
    name: str
    ref: ModelRef  # for a planned build, the file it will be written to
    reference: ModelRef | None = None  # same-tokenizer reference for fidelity
    source: ModelRef | None = None  # planned build: quantize `source` to `qtype`
    qtype: str | None = None
    imatrix: str | None = None
    skipped: str | None = None  # why it is not measured (does not fit, build failed)
    build: object | None = None  # planned engine conversion (convert/plan_section.py)


@dataclass
class RunState:
    lp: object  # LoadedPlan
    store: object  # ResultStore, with this run begun
    device: object  # DeviceProfile
    candidates: list[RunCandidate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # candidate name -> its ContextTokens counted from the scenario's context_from (its gates' lengths)
    context: dict = field(default_factory=dict)
    deadline: float | None = None  # `run --budget`: evaluate.outputs.now() at which to stop

    def remaining_s(self) -> float | None:
        if self.deadline is None:
            return None
        from edgepick.evaluate.outputs import now

        return max(1e-3, self.deadline - now())

    def active(self, local_only: bool = False) -> list[RunCandidate]:
        return [c for c in self.candidates if not c.skipped
                and (not local_only or not c.ref.is_endpoint)]

    def candidate(self, c: RunCandidate) -> Candidate:
        return Candidate(ref=c.ref, label=c.name, settings=self.lp.plan.runtime)


def fit_stage(st: RunState, tick: Tick) -> None:
    """Predict memory and speed; drop what cannot fit before spending time on it."""
    from edgepick.fit.stage import FitRequest, FitTarget, run

    plan = st.lp.plan
    rt = plan.runtime
    # a converted engine build has no GGUF header to estimate from: bench measures it
    todo = [c for c in st.candidates if not c.ref.is_endpoint and c.build is None]
    if not todo:
        return tick(ProgressEvent(0, 0, "done"))
    req = FitRequest(targets=[FitTarget(model=c.source or c.ref, quant=c.qtype, file=c.ref.path,
                                        label=c.name) for c in todo],
                     ctxs=[rt.n_ctx], device=st.device, kv_type=rt.kv_type,
                     margin=plan.fit.margin, n_ubatch=rt.n_ubatch, swa_full=rt.swa_full,
                     mmap=rt.mmap)
    for c, est in zip(todo, run(req, st.store, tick)):
        if est.verdict == "no" and plan.fit.skip_no_fit:
            c.skipped = (f"does not fit: predicted {mib(est.total_bytes)} > "
                         f"{mib(est.budget_bytes)} budget of {st.device.name}")
            st.notes.append(f"fit: {c.name} skipped — {c.skipped}")
        elif est.verdict == "tight":
            st.notes.append(f"fit: {c.name} fits only without the {whole_pct(plan.fit.margin)} margin")


def quantize_stage(st: RunState, tick: Tick) -> None:
    from edgepick.quantize.stage import QuantizeBuild, QuantizeRequest, run

    todo = [c for c in st.active() if c.source]
    if not todo:
        return tick(ProgressEvent(0, 0, "done"))
    req = QuantizeRequest(threads=st.lp.plan.runtime.threads, builds=[
        QuantizeBuild(source=c.source, qtype=c.qtype, target=c.ref.path, imatrix=c.imatrix,
                      label=c.name) for c in todo])
    for c, res in zip(todo, run(req, st.store, tick)):
        if res.error:
            c.skipped = f"build failed: {res.error}"
            st.notes.append(f"quantize: {c.name} {c.skipped}")
        elif res.file.requantized:
            st.notes.append(f"quantize: {c.name} was built from an already quantized source; "
                            "requantizing compounds error")


def convert_stage(st: RunState, tick: Tick) -> None:
    from edgepick.convert.plan_section import convert_stage as run

    run(st, tick)


def bench_stage(st: RunState, tick: Tick) -> None:
    from edgepick.bench.runner import run
    from edgepick.bench.sweeps import BenchRequest
    from edgepick.units import parse_size

    plan = st.lp.plan
    b = plan.bench
    active = st.active()
    if not active:
        return tick(ProgressEvent(0, 0, "done"))
    mem = None if b.mem_limit is None else (st.device.model_budget_bytes if b.mem_limit == "budget"
                                             else parse_size(b.mem_limit))
    from edgepick.plan.bench_lengths import bench_lengths
    from edgepick.plan.eval_gates import scenario_of

    scenario = scenario_of(st.lp)
    counted = _context_from(st, active, scenario)
    groups: dict[tuple, list] = {}  # candidates counted alike bench together
    for c in active:
        lengths, gen, notes = bench_lengths(b.prompt_lengths, b.gen_tokens, plan.runtime.n_ctx,
                                            scenario, counted.get(c.name))
        st.notes += [n for n in notes if n not in st.notes]
        groups.setdefault((tuple(lengths), gen), []).append(c)
    from edgepick.bench.session import power_source

    st.notes.append(f"bench power: {power_source(b.power)[1]}")
    names = {c.ref.spec: c.name for c in active}
    from edgepick.plan.bench_limits import bench_limits
    from edgepick.plan.context_from import gated_scenario

    gated = gated_scenario(scenario, counted, [])  # where decide reads each limit
    for (lengths, gen), group in groups.items():
        req = BenchRequest(models=[c.ref for c in group], settings=plan.runtime,
                           prompt_lengths=list(lengths), gen_tokens=gen, warmup=b.warmup,
                           repeats=b.repeats, max_repeats=b.repeat_cap,
                           limits=bench_limits(gated, list(lengths)),
                           concurrency=b.concurrency, sustain_s=b.sustain_s,
                           mem_limit=mem, timeout_s=b.timeout_s, power=b.power,
                           quiet_wait_s=b.quiet_wait_s, contended_share=b.contended_share,
                           memory_growth_max=b.memory_growth_max)
        _bench_group(st, run(req, st.store, tick), names)


def _context_from(st: RunState, active, scenario) -> dict:
    """Candidate name -> ContextTokens counted from the scenario's context_from with that
    candidate's tokenizer (empty: context_tokens given, or no context_from)."""
    if scenario.context_tokens is not None or not scenario.context_from:
        return st.context
    from edgepick.errors import EdgepickError
    from edgepick.plan.context_from import candidate_context, context_path, read_prompts

    path = context_path(st.lp)
    prompts = read_prompts(path)
    for c in active:
        if c.name in st.context:
            continue
        try:
            st.context[c.name], note = candidate_context(st.candidate(c), prompts,
                                                         scenario.context_from)
        except EdgepickError as exc:
            st.notes.append(f"bench: {c.name} context_from not counted ({exc}); "
                            "benched at the plan's own lengths")
            continue
        st.notes.append(note)
    return st.context


def _bench_group(st: RunState, results, names: dict) -> None:
    for res in results:
        if res.status != "ok":
            st.notes.append(f"bench: {names.get(res.model, res.model)} {res.config} "
                            f"failed: {res.error}")
        elif res.contended and not res.cached:
            st.notes.append(f"bench: {names.get(res.model, res.model)} {res.config} contended "
                            f"(other work {whole_pct(res.host_load.other_cpu_share)} of the CPUs)")
        rep = res.repetitions
        if res.status == "ok" and not res.cached and rep is not None and rep.stopped == "max":
            still = ", ".join(j.gate for j in rep.limits if j.verdict == "undetermined")
            st.notes.append(f"bench: {names.get(res.model, res.model)} {res.config} ran the "
                            f"most repetitions ({rep.ran}, bench.max_repeats); {still} still "
                            "undetermined: its median sits on the limit")


def eval_stage(st: RunState, tick: Tick) -> None:
    from edgepick.evaluate.stage import EvalRequest, run

    plan = st.lp.plan
    active = st.active()
    if not active:
        return tick(ProgressEvent(0, 0, "done"))
    ref = Candidate(ref=st.lp.ref(plan.eval.reference), settings=plan.runtime)
    from edgepick.plan.eval_gates import eval_gates, sampling_of, scenario_of, unroutable_failures

    scenario = scenario_of(st.lp)
    failing: dict[str, str] = {}
    if plan.eval.sequential:
        failing = unroutable_failures(st, active, scenario)
        for c in active:
            if c.name in failing:
                st.notes.append(f"eval: {c.name} not evaluated — fails {failing[c.name]}, "
                                "which no routing avoids")
        active = [c for c in active if c.name not in failing]
        if not active:
            return tick(ProgressEvent(0, 0, "done"))
    sampling, samples = sampling_of(scenario)
    req = EvalRequest(data=st.lp.eval_specs(), reference=ref,
                      candidates=[st.candidate(c) for c in active], limit=plan.eval.limit,
                      max_tokens=plan.eval.max_tokens, sampling=sampling, samples=samples,
                      sequential=plan.eval.sequential, gates=eval_gates(scenario),
                      look_items=plan.eval.look_items, max_items=plan.eval.max_items,
                      budget_s=st.remaining_s(), not_evaluated=failing)
    result = run(req, st.store, tick)
    if result is None:
        st.notes.append("eval: the time budget ran out before the first item; quality unmeasured")
        return None
    for p in result.problems[:5]:
        st.notes.append(f"eval: skipped bad line — {p}")
    if result.sequential is not None:
        from edgepick.evaluate.savings import savings_lines

        st.notes.extend(f"eval: {line}" for line in savings_lines(result))


def fidelity_stage(st: RunState, tick: Tick) -> None:
    from edgepick.evaluate.fidelity_stage import FidelityRequest, run

    f = st.lp.plan.fidelity
    todo = [c for c in st.active(local_only=True)
            if c.reference and c.reference.path != c.ref.path]  # the reference itself: KLD 0
    if not any(c.reference for c in st.active(local_only=True)):
        st.notes.append("fidelity: no candidate names a same-tokenizer reference; skipped")
    for i, c in enumerate(todo):
        def step(ev: ProgressEvent, _i=i) -> None:
            tick(ProgressEvent(_i, len(todo), f"{ev.what} {ev.done}/{ev.total}"))

        tick(ProgressEvent(i, len(todo), c.name))
        run(FidelityRequest(reference=c.reference, candidate=c.ref, text=st.lp.fidelity_text(),
                            ctx=f.ctx, max_chunks=f.max_chunks,
                            threads=st.lp.plan.runtime.threads, label=c.name), st.store, step)
    tick(ProgressEvent(len(todo), len(todo), "done"))


STAGES: list[tuple[str, Callable[[RunState, Tick], None], str]] = [
    ("fit", fit_stage, "edgepick.fit.stage"),
    ("quantize", quantize_stage, "edgepick.quantize.stage"),
    ("convert", convert_stage, "edgepick.convert.plan_section"),
    ("bench", bench_stage, "edgepick.bench.runner"),
    ("eval", eval_stage, "edgepick.evaluate.stage"),
    ("fidelity", fidelity_stage, "edgepick.evaluate.fidelity_stage"),
]
