"""A job: one stage's measurement of one candidate on one device, as a picklable request.

A job names an entry point `module:function` called as `fn(request, store)` on whichever machine
runs it, with a scratch store of its own; the rows that entry point stores come back to the driver
as plain data (seed 000 §3.4: measure on the device, collect in one place). Workers never open
the driver's SQLite file.
"""

from __future__ import annotations

import hashlib
import importlib
import socket
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgepick.errors import EdgepickError
from edgepick.store import ResultStore

Row = tuple[str, str, dict]  # (kind, key, payload), keys as the stage computes them


def scoped_key(key: str, scope: str | None) -> str:
    """A store key under a device: the stage's own key when there is one device (a local run's
    key), else a hash of device and key, so one candidate holds one row per device."""
    if scope is None:
        return key
    return hashlib.sha256(f"{scope}\0{key}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Job:
    id: str  # stable across runs: kind/device/candidate
    kind: str  # bench | eval | fidelity (for the progress table and the failure record)
    device: str | None  # the tag a node must carry (resource device:<tag>); None = any node
    candidate: str
    entry: str  # "module:function", called as fn(request, store) on the worker
    request: Any
    keys: tuple[tuple[str, str], ...]  # (kind, key) the job stores; all stored and ok = done
    returns: tuple[str, ...] = ()  # kinds it also brings back, keys not known before (outputs)
    scopes: tuple[str | None, ...] = (None,)  # device scopes its rows are written under
    cpus: float = 1.0
    memory: int | None = None  # bytes Ray should reserve on the node (the fit estimate)
    pin_local: bool = False  # device `local`: run on the driver's own machine
    seed_keys: tuple[tuple[str, str], ...] = ()  # rows it reads if held (the reference's outputs)
    after: str | None = None  # a job of the same batch whose rows it needs first

    @property
    def label(self) -> str:
        return f"{self.kind} {self.candidate}" + (f" on {self.device}" if self.device else "")


@dataclass
class JobResult:
    job_id: str
    ok: bool
    rows: list[Row] = field(default_factory=list)
    value: Any = None  # whatever the entry returned (eval: transient outputs not stored)
    error: str | None = None
    node: str = ""  # hostname of the machine that ran it
    wall_s: float = 0.0
    attempts: int = 1


def _entry(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _rows(store, kinds: set[str], seeded: set[tuple[str, str]]) -> list[Row]:
    out: list[Row] = []
    for kind in sorted(kinds):
        for key, payload in store.items(kind):
            if (kind, key) not in seeded:
                out.append((kind, key, payload))
    return out


def execute(job: Job, seed: list[Row] | None = None, after: JobResult | None = None) -> JobResult:
    """Run `job` here, against a scratch store pre-filled with `seed` (rows the driver already
    holds, so the stage resumes instead of redoing them) and with the rows of the job it waited
    for; returns the rows it added."""
    t0 = time.perf_counter()
    node = socket.gethostname()
    if after is not None:
        if not after.ok:
            return JobResult(job.id, False, node=node,
                             error=f"needs {after.job_id}, which failed: {after.error}")
        wanted = set(job.seed_keys) | set(job.keys)
        seed = [*(seed or []), *(r for r in after.rows if (r[0], r[1]) in wanted)]
    kinds = {k for k, _ in job.keys} | set(job.returns)
    with tempfile.TemporaryDirectory(prefix="edgepick-job-") as tmp:
        store = ResultStore(Path(tmp) / "scratch.sqlite")
        try:
            for kind, key, payload in seed or []:
                store.put(kind, key, payload)
            seeded = {(k, key) for k, key, _ in seed or []}
            try:
                value = _entry(job.entry)(job.request, store)
            except EdgepickError as exc:
                return JobResult(job.id, False, _rows(store, kinds, seeded), error=str(exc),
                                 node=node, wall_s=time.perf_counter() - t0)
            except Exception as exc:  # noqa: BLE001 - a job's crash is its failure record
                where = traceback.format_exc(limit=3).strip().splitlines()[-1]
                return JobResult(job.id, False, _rows(store, kinds, seeded), node=node,
                                 error=f"{type(exc).__name__}: {exc} [{where}]",
                                 wall_s=time.perf_counter() - t0)
            return JobResult(job.id, True, _rows(store, kinds, seeded), value=value, node=node,
                             wall_s=time.perf_counter() - t0)
        finally:
            store.close()

