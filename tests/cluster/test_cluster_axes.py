"""The Ray fleet gets the same runtime-axes candidates as a local run (issue 34 item 1): its
bench and fidelity jobs are built from plan/requests.py, one per combination, each with the
combination's settings and the store key the local stage would use. No Ray is started."""

from __future__ import annotations

from edgepick.bench.sweeps import request_keys
from edgepick.cluster.planjobs import DeviceWork, bench_jobs, fidelity_jobs
from edgepick.devices.catalog import load_device
from edgepick.plan.loader import load_plan
from edgepick.plan.requests import bench_requests
from edgepick.plan.runner import plan_candidates
from edgepick.plan.state import RunState

PLAN = """
name: axes
device: raspberry-pi-5
output: out
candidates:
  - model: tiny
    label: tiny-f16
runtime: {n_ctx: 256, kv_type: [f16, q4_0], threads: [1, 2], n_ubatch: [128, 256]}
bench: {prompt_lengths: [32], gen_tokens: 8, warmup: 0, repeats: 1}
eval: {enabled: false}
fidelity: {ctx: 128, max_chunks: 1}
"""


def test_fleet_jobs_are_the_local_runs_candidates(tmp_path):
    p = tmp_path / "plan.yaml"
    p.write_text(PLAN)
    lp = load_plan(p)
    st = RunState(lp=lp, store=None, device=load_device("raspberry-pi-5"),
                  candidates=plan_candidates(lp))
    names = [c.name for c in st.candidates]
    assert len(names) == 8 and "tiny-f16@kv=q4_0,t=2,ub=128" in names
    work = DeviceWork("raspberry-pi-5", None, st)
    jobs = bench_jobs(work)
    assert sorted(j.candidate for j in jobs) == sorted(names)
    local = {("bench", k) for req in bench_requests(st) for k in request_keys(req)}
    assert {k for j in jobs for k in j.keys} == local  # the same rows as a local run
    for j in jobs:
        settings = j.request.bench.settings
        assert j.candidate.endswith("@" + settings.variant)
        assert j.cpus == settings.threads  # Ray reserves the combination's own threads
    fid = fidelity_jobs(work)  # each against its own file at the f16-KV baseline
    assert sorted(j.candidate.split(" ctx=")[0] for j in fid) == sorted(names)
    assert len({k for j in fid for k in j.keys}) == 8


def test_the_reference_job_decodes_as_many_items_together_as_the_local_stage(tmp_path,
                                                                             monkeypatch):
    """The fleet's reference job is the local eval's reference call: the same items, budgets,
    sampling and `parallel` (it once dropped `parallel`, so the farm decoded one at a time)."""
    import json

    from edgepick.cluster import entries
    from edgepick.cluster.planjobs import reference_job
    from edgepick.evaluate.stage import EvalRequest
    from edgepick.inputs import resolve_ref
    from edgepick.records.candidate import Candidate, RuntimeSettings

    data = tmp_path / "set.jsonl"
    data.write_text("".join(json.dumps({"id": f"r{i}", "task": "yes_no", "prompt": f"q{i}",
                                        "reference": "yes"}) + "\n" for i in range(5)))
    ref = Candidate(ref=resolve_ref("tiny"), settings=RuntimeSettings(threads=1))
    req = EvalRequest(data=str(data), reference=ref, candidates=[ref], parallel=3,
                      sampling={"temperature": 0.7}, samples=2)
    job = reference_job(req, ())
    seen = {}
    monkeypatch.setattr(entries, "collect_outputs",
                        lambda cand, items, store, budgets, **kw: seen.update(kw, n=len(items)))
    entries.outputs(job.request, store=None)
    assert seen == {"sampling": {"temperature": 0.7}, "samples": 2, "parallel": 3, "n": 5}
