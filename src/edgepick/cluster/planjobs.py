"""The requests plan/requests.py builds for each device, as jobs: where each runs, and the keys
its stage says it stores under. Nothing here builds a request or computes a key of its own, so a
one-device plan stores exactly the rows a local run stores; with several devices each row is
stored once per device (jobs.scoped_key).

The reference's eval outputs: in a plan of one device, the eval job answers them itself, as the
local run does; with several, the reference answers every item once, on the driver (the same
yardstick for each device, and a reference that may not fit a small device), and each device's
eval job starts from those outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgepick.bench.sweeps import NETWORK_KIND, network_key, request_keys
from edgepick.cluster.entries import (BenchJobRequest, EvalJobRequest, FidelityJobRequest,
                                      OutputsJobRequest, Shipped)
from edgepick.cluster.jobs import Job
from edgepick.evaluate import fidelity_stage, stage as eval_stage
from edgepick.evaluate.eval_sets import load_sets, specs_of
from edgepick.evaluate.outputs import DEFAULT_MAX_TOKENS, OUTPUT_KIND, output_keys
from edgepick.evaluate.stage import request_items
from edgepick.plan.requests import bench_requests, fidelity_requests
from edgepick.plan.state import RunState

ENTRY = "edgepick.cluster.entries:"


@dataclass
class DeviceWork:
    """One device of the plan: its tag, the scope its rows live under, its run state."""

    tag: str
    scope: str | None
    state: RunState  # its candidates after this device's fit, its notes, its counted context
    fit_bytes: dict[str, int] = field(default_factory=dict)  # model path -> predicted bytes

    @property
    def profile(self):
        return self.state.device


def _job(kind: str, dev: DeviceWork, name: str, endpoint: bool, entry: str, request, keys,
         memory: int | None = None, **kw) -> Job:
    # An endpoint is measured from any node (the target runs no Python); a file, on the device.
    device = None if endpoint else dev.tag
    # a runtime-axes candidate asks for its own thread count
    threads = kw.pop("threads", None) or dev.state.lp.plan.runtime.threads
    return Job(id=f"{kind}/{dev.tag}/{name}", kind=kind, device=device, candidate=name,
               entry=ENTRY + entry, request=request, keys=tuple(keys), scopes=(dev.scope,),
               cpus=1 if endpoint else threads, memory=memory, pin_local=device == "local", **kw)


def bench_jobs(dev: DeviceWork) -> list[Job]:
    """One job per candidate, each the candidate's share of its group's BenchRequest."""
    names = {(c.ref.spec, c.variant): c.name for c in dev.state.active()}
    jobs = []
    for group in bench_requests(dev.state):
        for ref in group.models:
            req = group.model_copy(update={"models": [ref]})
            keys = [("bench", k) for k in request_keys(req)]
            net = network_key(req) if ref.is_endpoint else None
            if net is not None:
                keys.append((NETWORK_KIND, net))
            name = names[(ref.spec, group.settings.variant)]
            jobs.append(_job("bench", dev, name, ref.is_endpoint, "bench",
                             BenchJobRequest(req, net), keys, dev.fit_bytes.get(ref.locator),
                             threads=req.settings.threads))
    return jobs


def fidelity_jobs(dev: DeviceWork) -> list[Job]:
    jobs = []
    for c, req in fidelity_requests(dev.state):
        text = Shipped.of(req.text)
        # a runtime-axes candidate is compared at each of the scenario's contexts: a job each
        name = c.name if req.settings is None else f"{c.name} ctx={req.ctx}"
        jobs.append(_job("fidelity", dev, name, False, "fidelity", FidelityJobRequest(req, text),
                         [("fidelity", fidelity_stage.store_key(req))], dev.fit_bytes.get(c.ref.locator),
                         threads=req.threads))
    return jobs


def reference_job(req, scopes: tuple) -> Job:
    """The reference's outputs on every item of `req` (an EvalRequest), with its sampling, once
    on the driver's machine when it is a file (that is where it is), stored under every device."""
    ref = req.reference
    _, items = request_items(req)
    budgets = dict(DEFAULT_MAX_TOKENS, **req.max_tokens)
    keys = [(OUTPUT_KIND, k) for ks in output_keys(ref, items, budgets, req.sampling, req.samples)
            for k in ks]
    endpoint = ref.ref.is_endpoint
    return Job(id=f"eval/reference/{ref.name}", kind="eval", device=None if endpoint else "local",
               candidate=f"{ref.name} (reference)", entry=ENTRY + "outputs",
               request=OutputsJobRequest(ref, items, budgets, req.sampling, req.samples,
                                         req.parallel),
               keys=tuple(keys), scopes=scopes, cpus=1 if endpoint else ref.settings.threads,
               pin_local=not endpoint)


def eval_job(dev: DeviceWork, req, ref_job: Job | None) -> Job:
    """The device's EvalRequest as one job, as the local eval stage runs it: the candidates'
    outputs come back with the result."""
    specs = specs_of(req.data, req.limit)
    shipped = EvalJobRequest(req, [Shipped.of(s.set) for s in specs], load_sets(specs).label)
    endpoint = all(c.ref.is_endpoint for c in req.candidates) and (
        ref_job is not None or req.reference.ref.is_endpoint)
    memory = max((dev.fit_bytes.get(c.ref.locator) or 0 for c in req.candidates), default=0)
    return _job("eval", dev, "candidates", endpoint, "evaluate", shipped,
                [("eval", eval_stage.store_key(req))], memory or None, returns=(OUTPUT_KIND,),
                seed_keys=ref_job.keys if ref_job else (),
                after=ref_job.id if ref_job else None)
