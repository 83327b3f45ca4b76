"""The plan turned into the stages' requests, once, for one device's run state.

Both executors take their requests from here: the local run (plan/stages.py) runs each one on
this machine, the Ray fleet (cluster/planjobs.py) sends each to the node carrying the device's
tag. A setting the plan carries reaches a measurement through this module or not at all, so the
two paths cannot drift apart. What a request will store under is the stage's own business
(`bench.sweeps.request_keys`, `evaluate.stage.store_key`, `evaluate.fidelity_stage.store_key`).
"""

from __future__ import annotations

from edgepick.bench.session import power_source
from edgepick.bench.sweeps import BenchRequest
from edgepick.convert.stage import ConvertBuild, ConvertRequest
from edgepick.decide.selection import candidate_key
from edgepick.decide.stage import DecideRequest
from edgepick.errors import EdgepickError
from edgepick.evaluate.fidelity_stage import FidelityRequest
from edgepick.evaluate.stage import EvalRequest
from edgepick.plan.bench_lengths import bench_lengths
from edgepick.plan.bench_limits import bench_limits
from edgepick.plan.context_from import candidate_context, context_path, gated_scenario, read_prompts
from edgepick.plan.eval_gates import eval_gates, sampling_of, unroutable_failures
from edgepick.plan.state import RunCandidate, RunState
from edgepick.records.candidate import Candidate
from edgepick.units import parse_size


def bench_requests(st: RunState) -> list:
    """One BenchRequest per group of candidates benched at the same lengths: the plan's own,
    plus the scenario's context percentiles (counted from `context_from` with each candidate's
    tokenizer) and answer length, with the limits decide reads at each length."""
    plan = st.lp.plan
    b = plan.bench
    active = st.active()
    if not active:
        return []
    mem = None if b.mem_limit is None else (st.device.model_budget_bytes if b.mem_limit == "budget"
                                             else parse_size(b.mem_limit))
    scenario = st.lp.scenario
    counted = _context_from(st, active, scenario)
    # candidates counted alike and run with the same settings bench together
    groups: dict[tuple, list[RunCandidate]] = {}
    for c in active:
        lengths, gen, notes = bench_lengths(b.prompt_lengths, b.gen_tokens, plan.runtime.n_ctx,
                                            scenario, counted.get(c.name))
        st.notes += [n for n in notes if n not in st.notes]
        # a placement's `half` is each model's own count under one variant name
        groups.setdefault((tuple(lengths), gen, c.variant, repr(st.settings(c).placement)),
                          []).append(c)
    power_note = f"bench power: {power_source(b.power)[1]}"
    if power_note not in st.notes:
        st.notes.append(power_note)
    gated = gated_scenario(scenario, counted, [])  # where decide reads each limit
    return [BenchRequest(models=[c.ref for c in group], settings=st.settings(group[0]),
                         prompt_lengths=list(lengths), gen_tokens=gen, warmup=b.warmup,
                         repeats=b.repeats, max_repeats=b.repeat_cap,
                         limits=bench_limits(gated, list(lengths)),
                         concurrency=b.concurrency, sustain_s=b.sustain_s, mem_limit=mem,
                         timeout_s=b.timeout_s, power=b.power, quiet_wait_s=b.quiet_wait_s,
                         contended_share=b.contended_share,
                         memory_growth_max=b.memory_growth_max)
            for (lengths, gen, _, _), group in groups.items()]


def _context_from(st: RunState, active: list[RunCandidate], scenario) -> dict:
    """Candidate name -> ContextTokens counted from the scenario's context_from with that
    candidate's tokenizer (empty: context_tokens given, or no context_from)."""
    if scenario.context_tokens is not None or not scenario.context_from:
        return st.context

    prompts = read_prompts(context_path(st.lp))
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


def eval_request(st: RunState):
    """The EvalRequest of this device's candidates against the plan's reference, with the
    scenario's sampling and gates; None when nothing is left to evaluate. Sequential: a
    candidate that this run's measurements already rule out on a gate no routing avoids is
    left out and named (read from the store, so the bench must have run)."""
    plan = st.lp.plan
    active = st.active()
    if not active:
        return None
    scenario = st.lp.scenario
    failing: dict[str, str] = {}
    if plan.eval.sequential:
        failing = unroutable_failures(st, active, scenario)
        for c in active:
            if c.name in failing:
                note = (f"eval: {c.name} not evaluated — fails {failing[c.name]}, which no "
                        "routing avoids")
                if note not in st.notes:
                    st.notes.append(note)
        active = [c for c in active if c.name not in failing]
        if not active:
            return None
    sampling, samples = sampling_of(scenario)
    return EvalRequest(data=st.lp.eval_specs(),
                       # the reference answers for quality: where its tensors lie is no part of
                       # it, and a candidate's placement may not suit its engine
                       reference=Candidate(ref=st.lp.ref(plan.eval.reference),
                                           settings=plan.runtime.model_copy(
                                               update={"placement": None})),
                       candidates=[st.candidate(c) for c in active], limit=plan.eval.limit,
                       max_tokens=plan.eval.max_tokens, sampling=sampling, samples=samples,
                       sequential=plan.eval.sequential,
                       gates=eval_gates(scenario) if plan.eval.sequential else [],
                       look_items=plan.eval.look_items, max_items=plan.eval.max_items,
                       budget_s=st.remaining_s(), not_evaluated=failing,
                       parallel=plan.eval.parallel)


def convert_request(st: RunState):
    """(the candidates to build, the ConvertRequest building them) for the plan's `convert:`
    section (convert/plan_section.py planned each build's recipe and folder); None: none."""
    todo = [c for c in st.active() if c.build is not None]
    if not todo:
        return None
    return todo, ConvertRequest(builds=[
        ConvertBuild(name=c.name, source=c.build.source, recipe=c.build.recipe, out=c.build.out)
        for c in todo])


def fidelity_requests(st: RunState) -> list[tuple[RunCandidate, object]]:
    """(candidate, FidelityRequest) for each local candidate with a same-tokenizer reference
    other than itself (against itself the KLD is 0 by definition). A candidate of the plan's
    runtime axes is compared with its own file at the f16-KV baseline instead, at the
    scenario's P95 and P99 context (a quantized cache's error grows with the fill): what its
    settings alone do to the answers."""
    f = st.lp.plan.fidelity
    out = []
    for c in st.active(local_only=True):
        own = c.variant is not None
        reference = c.ref if own else c.reference
        if reference is None or (not own and reference.path == c.ref.path):
            continue
        for ctx in (_fidelity_contexts(st, c) if own else [f.ctx]):
            out.append((c, FidelityRequest(
                reference=reference, candidate=c.ref, text=st.lp.fidelity_text(), ctx=ctx,
                max_chunks=f.max_chunks, threads=st.settings(c).threads, label=c.name,
                settings=st.settings(c) if own else None)))
    return out


MAX_FIDELITY_CTX = 4096  # the bundled text holds about twice that in a small model's tokens


def _fidelity_contexts(st: RunState, c: RunCandidate) -> list[int]:
    """The scenario's P95 and P99 context (counted with this candidate's tokenizer, or as the
    scenario gives them), within the candidate's n_ctx; the plan's fidelity.ctx without them."""
    ct = st.context.get(c.name) or st.lp.scenario.context_tokens
    wanted = [x for x in ((ct.p95, ct.p99) if ct is not None else ()) if x]
    cap = min(st.settings(c).n_ctx, MAX_FIDELITY_CTX)
    return sorted({max(16, min(x, cap)) for x in wanted}) or [st.lp.plan.fidelity.ctx]


def decide_request(st: RunState, run_id: int, scope: str | None = None,
                   failures: dict[str, str] | None = None):
    """The decision over this device's run: gated at the lengths the bench measured, under
    the device's memory and power budgets. `scope`: the device's tag in a plan of several
    devices, whose decision, deploy and report are stored apart."""
    lp, plan = st.lp, st.lp.plan
    out = lp.output
    report = (out / "report" / scope if scope else out / "report") if plan.report.enabled \
        else None
    return DecideRequest(
        scenario=gated_scenario(lp.scenario, st.context, st.notes),
        budget=st.device.model_budget_bytes, power_budget_w=st.device.power_budget_w,
        device=scope or st.device.name, runs=[run_id],
        models=[candidate_key(c.ref.locator, c.variant) for c in st.candidates],
        names={candidate_key(c.ref.locator, c.variant): c.name for c in st.candidates},
        skipped={c.name: c.skipped for c in st.candidates}, failures=dict(failures or {}),
        store_as=f"{plan.name}@{scope}" if scope else plan.name,
        deploy=out / "deploy" / f"{scope}.yaml" if scope else out / "deploy.yaml",
        run_id=str(run_id), report=report, lang=plan.report.lang)

