"""The driver's side of a job: skip what is stored, seed what is half done, write what comes back.

A job whose rows are all stored (and ok) under every scope it writes is not sent again, so a
re-run measures nothing twice. Each result is written under its device scope in one
uninterruptible step, with a `cluster_job` row saying where it ran, how long it took and, for a
failure, why.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from typing import Callable

from edgepick.cluster.executor import EXECUTORS, Executor, LocalExecutor, deferred_interrupt
from edgepick.cluster.jobs import Job, JobResult, Row, scoped_key
from edgepick.cluster.ray_executor import RayExecutor
from edgepick.errors import EdgepickError

JOB_KIND = "cluster_job"


def get_executor(name: str, address: str | None = None, **options) -> Executor:
    # Here rather than in executor.py: the Ray executor builds on executor.py's parts.
    if name == "local":
        if address:
            raise EdgepickError("--address names a Ray cluster; it needs --executor ray")
        return LocalExecutor()
    if name == "ray":
        return RayExecutor(address=address, **options)
    raise EdgepickError(f"unknown executor '{name}' (known: {', '.join(EXECUTORS)})")


def job_key(job: Job, scope: str | None) -> str:
    return scoped_key(hashlib.sha256(job.id.encode()).hexdigest()[:32], scope)


def _ok(payload: dict | None) -> bool:
    return payload is not None and payload.get("status", "ok") == "ok"


def _use_run(store, runs: dict | None, scope: str | None) -> None:
    # Each device's rows belong to that device's run, so a decision reads one device at a time.
    if runs and scope in runs:
        store.run_id = runs[scope]


def is_stored(store, job: Job, runs: dict | None = None) -> bool:
    """Every row held and ok under every scope (the rows a re-run reuses join its runs)."""
    for scope in job.scopes:
        _use_run(store, runs, scope)
        if not all(_ok(store.get(kind, scoped_key(key, scope))) for kind, key in job.keys):
            return False
    return True


def seed_rows(store, job: Job) -> list[Row]:
    """Rows of this job (and those it reads) already held under its first scope, given back
    under the stage's keys."""
    out: list[Row] = []
    for kind, key in (*job.keys, *job.seed_keys):
        payload = store.get(kind, scoped_key(key, job.scopes[0]))
        if _ok(payload):
            out.append((kind, key, payload))
    return out


def write_result(store, job: Job, res: JobResult, runs: dict | None = None) -> None:
    with deferred_interrupt():
        for scope in job.scopes:
            _use_run(store, runs, scope)
            for kind, key, payload in res.rows:
                skey = scoped_key(key, scope)
                if payload.get("key") == key:  # a record that carries its key carries the stored one
                    payload = dict(payload, key=skey)
                store.put(kind, skey, payload, label=job.candidate)
            store.put(JOB_KIND, job_key(job, scope), {
                "job": job.id, "kind": job.kind, "device": job.device, "scope": scope,
                "candidate": job.candidate, "status": "ok" if res.ok else "failed",
                "error": res.error, "node": res.node, "wall_s": round(res.wall_s, 3),
                "attempts": res.attempts, "rows": len(res.rows), "finished": time.time()},
                label=job.label)


def run_jobs(jobs: list[Job], store, executor: Executor, event: Callable[[str, str], None],
             runs: dict[str | None, int] | None = None) -> dict[str, JobResult]:
    """Every job's result by id; jobs already stored are reported as `stored` and not run.
    `runs` maps a device scope to the store run its rows belong to."""
    todo: list[Job] = []
    for job in jobs:
        if is_stored(store, job, runs):
            event(job.id, "stored")
        else:
            todo.append(job)
    ids = {j.id for j in todo}
    todo = [replace(j, after=j.after if j.after in ids else None) for j in todo]
    seeds = {j.id: seed_rows(store, j) for j in todo}
    by_id = {j.id: j for j in todo}
    results: dict[str, JobResult] = {}
    stream = executor.run(todo, seeds, event)
    try:
        for res in stream:
            write_result(store, by_id[res.job_id], res, runs)
            results[res.job_id] = res
    finally:
        stream.close()  # on Ctrl-C here too, the executor cancels what is still out
    return results
