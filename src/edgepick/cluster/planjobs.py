"""A plan's measurements as jobs: bench, eval and fidelity of each candidate on each device, and the
reference's eval outputs once (the yardstick every device's gap is measured against), which the
eval jobs wait for.

The keys are the stages' own (bench configurations, the eval result, the fidelity comparison),
so a one-device plan stores exactly the rows a local run stores; with several devices each row
is stored once per device (jobs.scoped_key).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from edgepick.cluster.entries import (NETWORK_KIND, BenchJobRequest, EvalJobRequest,
                                      FidelityJobRequest, OutputsJobRequest, Shipped)
from edgepick.cluster.jobs import Job
from edgepick.store.identity import content_key

ENTRY = "edgepick.cluster.entries:"


@dataclass
class DeviceWork:
    """One device of the plan: its tag, the scope its rows live under, its candidates."""

    tag: str
    scope: str | None
    profile: object  # DeviceProfile
    candidates: list = field(default_factory=list)  # RunCandidate, after this device's fit
    fit_bytes: dict[str, int] = field(default_factory=dict)  # model path -> predicted bytes


def _job(kind: str, dev: DeviceWork, c, entry: str, request, keys, cpus: int, **kw) -> Job:
    # An endpoint is measured from any node (the target runs no Python); a file, on the device.
    device = None if c.ref.is_endpoint else dev.tag
    return Job(id=f"{kind}/{dev.tag}/{c.name}", kind=kind, device=device, candidate=c.name,
               entry=ENTRY + entry, request=request, keys=tuple(keys), scopes=(dev.scope,),
               cpus=1 if c.ref.is_endpoint else cpus, memory=dev.fit_bytes.get(c.ref.locator),
               pin_local=device == "local", **kw)


def bench_jobs(lp, dev: DeviceWork) -> list[Job]:
    from edgepick.bench.sweeps import BenchRequest, expand
    from edgepick.units import parse_size

    plan = lp.plan
    b = plan.bench
    mem = None if b.mem_limit is None else (dev.profile.model_budget_bytes
                                            if b.mem_limit == "budget" else parse_size(b.mem_limit))
    from edgepick.plan.bench_limits import bench_limits
    from edgepick.plan.eval_gates import scenario_of

    # the local bench stage's repetition rule (repeat a gated median until settled, at most
    # bench.max_repeats), so a local run finds the fleet's rows enough and reuses them
    limits = bench_limits(scenario_of(lp), list(b.prompt_lengths))
    jobs = []
    for c in dev.candidates:
        if c.skipped:
            continue
        req = BenchRequest(models=[c.ref], settings=plan.runtime, prompt_lengths=b.prompt_lengths,
                           gen_tokens=b.gen_tokens, warmup=b.warmup, repeats=b.repeats,
                           max_repeats=b.repeat_cap, limits=limits,
                           concurrency=b.concurrency, sustain_s=b.sustain_s, mem_limit=mem,
                           timeout_s=b.timeout_s)
        keys = [("bench", cfg.key) for cfg in expand(req) if cfg.key]
        net = None
        if c.ref.is_endpoint:
            net = hashlib.sha256(json.dumps(["network", keys]).encode()).hexdigest()[:32]
            keys.append((NETWORK_KIND, net))
        jobs.append(_job("bench", dev, c, "bench", BenchJobRequest(req, net), keys,
                         plan.runtime.threads))
    return jobs


@dataclass
class EvalInputs:
    items: list
    reference: object  # Candidate
    budgets: dict[str, int]  # the defaults with the plan's overrides, as the eval stage uses them
    data: Shipped


def eval_inputs(lp) -> EvalInputs:
    from edgepick.evaluate.eval_sets import spread
    from edgepick.evaluate.items import load_eval_set
    from edgepick.evaluate.outputs import DEFAULT_MAX_TOKENS
    from edgepick.records.candidate import Candidate

    plan = lp.plan
    if len(lp.eval_specs()) > 1:  # one shipped file per eval job
        from edgepick.errors import InputError

        raise InputError(lp.path, "a cluster run evaluates one eval set; merge the sets into "
                         "one JSONL file or run the plan without a cluster", field="eval.data")
    items, _ = load_eval_set(lp.eval_data())
    ref = Candidate(ref=lp.ref(plan.eval.reference), settings=plan.runtime)
    # the items the eval stage takes: the set's limit, then the cap over all sets
    return EvalInputs(spread(spread(items, plan.eval.limit), plan.eval.max_items), ref,
                      dict(DEFAULT_MAX_TOKENS, **(plan.eval.max_tokens or {})),
                      Shipped.of(lp.eval_data()))


def _output_keys(cand, inputs: EvalInputs) -> list[tuple[str, str]]:
    from edgepick.evaluate.outputs import OUTPUT_KIND, budget, output_key

    ck = content_key(cand)
    return [(OUTPUT_KIND, output_key(ck, it, budget(it, inputs.budgets), cand.settings.seed))
            for it in inputs.items]


def reference_job(inputs: EvalInputs, scopes: tuple) -> Job:
    """The reference runs once, on the driver's machine when it is a file (that is where it
    is), and its outputs are stored under every device: the same yardstick for each."""
    ref = inputs.reference
    endpoint = ref.ref.is_endpoint
    return Job(id=f"eval/reference/{ref.name}", kind="eval", device=None if endpoint else "local",
               candidate=f"{ref.name} (reference)", entry=ENTRY + "outputs",
               request=OutputsJobRequest(ref, inputs.items, inputs.budgets),
               keys=tuple(_output_keys(ref, inputs)), scopes=scopes,
               cpus=1 if endpoint else ref.settings.threads, pin_local=not endpoint)


def eval_jobs(lp, dev: DeviceWork, inputs: EvalInputs, ref_job: Job) -> list[Job]:
    """One job per candidate. With `eval.sequential` (the default) each evaluates in looks
    with the scenario's gates, exactly as the local eval stage does (evaluate/looks.py), so a
    candidate stops once settled or futile; the reference's outputs come from its own job,
    made once for every device on all the items (a device's looks cannot reach the driver's
    file), so only the candidates' generations are saved on the fleet."""
    from edgepick.evaluate.eval_result import key_extra, result_key
    from edgepick.evaluate.gap import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
    from edgepick.evaluate.looks import Sequential
    from edgepick.evaluate.stage import EvalRequest
    from edgepick.plan.eval_gates import eval_gates, scenario_of
    from edgepick.records.candidate import Candidate

    plan = lp.plan
    e = plan.eval
    gates = eval_gates(scenario_of(lp)) if e.sequential else []
    extra = key_extra(None, 1, Sequential(gates=gates, look_items=e.look_items)
                      if e.sequential else None)
    jobs = []
    for c in dev.candidates:
        if c.skipped:
            continue
        cand = Candidate(ref=c.ref, label=c.name, settings=plan.runtime)
        req = EvalRequest(data=lp.eval_data(), reference=inputs.reference, candidates=[cand],
                          limit=e.limit, max_tokens=e.max_tokens, sequential=e.sequential,
                          gates=gates, look_items=e.look_items, max_items=e.max_items)
        key = result_key(inputs.items, inputs.reference, [cand], inputs.budgets,
                         BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, extra)
        jobs.append(_job("eval", dev, c, "evaluate", EvalJobRequest(req, inputs.data),
                         [("eval", key)], plan.runtime.threads, seed_keys=ref_job.keys,
                         after=ref_job.id))
    return jobs


def fidelity_jobs(lp, dev: DeviceWork) -> list[Job]:
    from edgepick.evaluate.fidelity_stage import FidelityRequest, store_key

    plan = lp.plan
    f = plan.fidelity
    text = Shipped.of(lp.fidelity_text())
    jobs = []
    for c in dev.candidates:
        if c.skipped or not c.reference or c.ref.is_endpoint or c.reference.path == c.ref.path:
            continue  # the reference itself: KLD 0 by definition
        req = FidelityRequest(reference=c.reference, candidate=c.ref, text=text.path, ctx=f.ctx,
                              max_chunks=f.max_chunks, threads=plan.runtime.threads, label=c.name)
        jobs.append(_job("fidelity", dev, c, "fidelity", FidelityJobRequest(req, text),
                         [("fidelity", store_key(req))], plan.runtime.threads))
    return jobs
