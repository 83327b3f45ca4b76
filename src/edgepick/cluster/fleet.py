"""`edgepick run PLAN --executor ray`: fit per device on the driver, every measurement a job on its
device, then per device the decision and the report, and the fleet's view on top.

Measure on the device, collect in one place (seed 000 §3.4; docs/scale.md).
The driver alone writes the
store, each device's rows under a run of its own; builds are made on the driver, at paths every
node reads (a shared folder, docs/scale.md).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

from edgepick.cluster.dispatch import get_executor, run_jobs
from edgepick.bench.sweeps import NETWORK_KIND
from edgepick.cluster.executor import LocalExecutor
from edgepick.cluster.fleet_report import (DeviceOutcome, fleet_choice, recommendation_text,
                                           write_fleet)
from edgepick.cluster.jobs import scoped_key
from edgepick.cluster.nodes import cluster_nodes, published_profiles
from edgepick.cluster.planjobs import (DeviceWork, bench_jobs, eval_job, fidelity_jobs,
                                       reference_job)
from edgepick.decide.selection import select
from edgepick.decide.stage import run as run_stage
from edgepick.devices.catalog import catalog, load_device
from edgepick.errors import EdgepickError
from edgepick.plan.requests import decide_request, eval_request
from edgepick.plan.runner import RunResult, plan_candidates, say_grid
from edgepick.plan.stages import ON_DRIVER, RunState, enabled_stages
from edgepick.progress import JobBoard, QuietDisplay, RunDisplay, silent
from edgepick.records.device import DeviceProfile
from edgepick.store import ResultStore


def device_profiles(lp, tags: list[str], executor: str) -> dict:
    """Each tag's profile: the one its node probed and published, else a catalog name or a
    profile file of that name, else `local` probed here."""
    published = {}
    if executor == "ray":
        published = published_profiles()
    out = {}
    for tag in tags:
        if tag in published:
            out[tag] = DeviceProfile.model_validate(dict(published[tag][0][1], name=tag))
        elif tag == "local" or tag in catalog():
            out[tag] = load_device(tag)
        elif os.path.isfile(lp.resolve(tag)):
            out[tag] = load_device(lp.resolve(tag))
        else:
            raise EdgepickError(f"device '{tag}': no node has published a profile for it "
                                f"(`edgepick node start --device {tag}` does), and it is not "
                                f"a catalog name or a profile file")
    return out


# The stages the farm runs as jobs: every stage of plan/stages.py's list not run on the driver
# (tests/cluster check that the two lists together are the local executor's).
JOB_STAGES = ("bench", "fidelity", "eval")


def _live_tags(executor: str) -> set[str]:
    if executor != "ray":
        return {"local"}

    return {t for n in cluster_nodes() if n.alive for t in n.devices} | {"local"}


def _prepare(lp, store, profiles: dict, runs: dict, multi: bool,
             live: set[str]) -> list[DeviceWork]:
    """The driver's stages (plan/stages.py ON_DRIVER: fit, then the builds) per device, each
    under its own run: what cannot fit a device is not measured there; a build is made once, by
    the first device that can hold it. A device that an endpoint names and no node carries (a
    phone) runs no Python: only its endpoints."""
    driver = [fn for name, fn, _ in enabled_stages(lp.plan) if name in ON_DRIVER]
    cands = plan_candidates(lp)
    only = {c.name: c.device for c in cands}
    http_only = {only[c.name] for c in cands if c.ref.is_endpoint and only.get(c.name)} - live
    works = []
    for tag, profile in profiles.items():
        store.run_id = runs[tag]
        mine = [copy.copy(c) for c in cands if only.get(c.name) in (None, tag)
                and (c.ref.is_endpoint or tag not in http_only)]
        st = RunState(lp=lp, store=store, device=profile, candidates=mine)
        if tag in http_only:
            st.notes.append(f"no node carries device tag {tag}: only its endpoints are measured")
        for fn in driver:
            fn(st, silent)
        works.append(DeviceWork(tag, tag if multi else None, st, _predicted_bytes(store)))
    return works


def _predicted_bytes(store) -> dict[str, int]:
    """Model path -> the fit stage's memory estimate in this run (what a job asks Ray for)."""
    return {m: row.payload["total_bytes"] for row in select(store, [store.run_id]).rows
            if row.kind == "fit" and row.payload.get("total_bytes") for m in row.models}


def run_fleet(lp, executor: str = "ray", address: str | None = None,
              display: RunDisplay | None = None):
    """The plan over its devices (or its one device) through `executor`; a `RunResult` whose
    decision is the first device's, with every device's report and the fleet's. `display`
    shows the lines and the jobs by device (the CLI's; none: nothing is shown)."""
    plan = lp.plan
    display = display or QuietDisplay()
    multi = bool(plan.devices)
    tags = list(plan.devices) or [plan.device]
    options = {} if executor == "local" else {"max_retries": plan.cluster.max_retries,
                                              "node_timeout_s": plan.cluster.node_timeout_s}
    if executor == "local":  # before any work: this machine cannot stand in for a Pi
        LocalExecutor.check_devices(tags)
    else:
        address = address or plan.cluster.address

    say_grid(lp, plan_candidates(lp), display.say)  # a refused grid stops here, before any work
    ex = get_executor(executor, address, **options)
    lp.output.mkdir(parents=True, exist_ok=True)
    store = ResultStore(lp.store_path)
    notes: list[str] = []
    try:
        if "local" in tags:
            display.say("probing this machine (bandwidth, compute)…")
        profiles = device_profiles(lp, tags, executor)
        runs = {tag: store.begin_run(f"edgepick run {lp.path} --executor {executor}"
                                     + (f" (device {tag})" if multi else ""),
                                     dict(plan.model_dump(mode="json"), device=tag))
                for tag in tags}
        works = _prepare(lp, store, profiles, runs, multi, _live_tags(executor))
        on_jobs = {name for name, _, _ in enabled_stages(plan)} - ON_DRIVER
        scope_runs = {w.scope: runs[w.tag] for w in works}
        per: dict[str, list] = {w.tag: [] for w in works}
        results: dict = {}
        ref_job = None
        with display.board() as board:
            # the bench first: the eval leaves out what its figures already rule out, as locally
            for w in works:
                store.run_id = runs[w.tag]
                per[w.tag] += (bench_jobs(w) if "bench" in on_jobs else []) \
                    + (fidelity_jobs(w) if "fidelity" in on_jobs else [])
            results.update(_dispatch(board, [j for js in per.values() for j in js], store, ex,
                                     scope_runs))
            if "eval" in on_jobs:
                ref_job, evals = _eval_jobs(works, runs, store, multi)
                for tag, job in evals.items():
                    per[tag].append(job)
                results.update(_dispatch(board, [*([ref_job] if ref_job else []),
                                                 *evals.values()], store, ex, scope_runs))
        outcomes = []
        for w in works:
            store.run_id = runs[w.tag]
            outcomes.append(_outcome(w, per[w.tag], results, ref_job, multi))
            notes += [f"{w.tag}: {n}" if multi else n for n in w.state.notes]
        reports = [o.report for o in outcomes if o.report]
        if multi:
            reports = write_fleet(outcomes, lp.scenario.name, lp.output / "report",
                                  plan.report.lang) + reports
            notes.insert(0, f"the decision shown is {tags[0]}'s; every device's, side by side, "
                            f"is in {reports[0]}")
            notes += [f"{o.tag}: recommendation {recommendation_text(o)}" for o in outcomes] \
                + [f"fleet: {fleet_choice(outcomes)[1]}"]
        notes += [f"{o.tag}: job failed — {f}" for o in outcomes for f in o.failures]
        notes += [f"{o.tag}: {n}" if multi else n for o in outcomes for n in o.notes]
    finally:
        ex.close()
        store.close()
    first = outcomes[0]
    return RunResult(decision=first.decision, summaries=first.summaries, reports=reports,
                     notes=notes, store=lp.store_path, run_id=runs[tags[0]], deploy=first.deploy)


def _dispatch(board: JobBoard, jobs: list, store, ex, scope_runs: dict) -> dict:
    board.add(jobs)
    return run_jobs(jobs, store, ex, board.event, scope_runs)


def _eval_jobs(works: list[DeviceWork], runs: dict, store, multi: bool):
    """(the reference's job or None, device tag -> its eval job). Each device's EvalRequest is
    built after its bench is stored, under its own run, as the local eval stage builds it."""
    reqs = {}
    for w in works:
        store.run_id = runs[w.tag]
        if (req := eval_request(w.state)) is not None:
            reqs[w.tag] = (w, req)
    if not reqs:
        return None, {}
    first = next(iter(reqs.values()))[1]
    ref_job = None
    if multi and not first.reference.ref.is_endpoint:
        ref_job = reference_job(first, tuple(w.scope for w in works))
    return ref_job, {tag: eval_job(w, req, ref_job) for tag, (w, req) in reqs.items()}


def _outcome(w: DeviceWork, jobs: list, results: dict, ref_job, multi: bool) -> DeviceOutcome:
    store = w.state.store
    failures, network, job_failed = [], {}, {}
    for j in jobs:
        res = results.get(j.id)
        if res is not None and not res.ok:
            failures.append(f"{j.label}: {res.error}")
            if j.kind == "bench":
                job_failed.setdefault(j.candidate, f"job failed on the cluster: {res.error}")
        for kind, k in j.keys:
            if kind == NETWORK_KIND and (row := store.get(kind, scoped_key(k, w.scope))):
                network[j.candidate] = row
    if ref_job is not None and (r := results.get(ref_job.id)) is not None and not r.ok:
        failures.append(f"{ref_job.label}: {r.error}")
    rec = run_stage(decide_request(w.state, store.run_id, w.scope, job_failed), store)
    return DeviceOutcome(w.tag, w.profile, rec.summaries, rec.decision, network, failures,
                         Path(rec.reports[0]) if rec.reports else None,
                         deploy=Path(rec.deploy) if rec.deploy else None, notes=rec.notes)
