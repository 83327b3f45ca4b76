"""The Ray executor: each job a Ray task on a node that carries its device tag (docs/scale.md).

A task asks for `{"device:<tag>": 1}` (one job per device at a time, so measurements never share a
machine), the CPUs its threads use and the memory the fit stage predicts. Ray retries a task whose
worker or node died (`max_retries`), on any node with the same tag; past that, the job is recorded
as failed with the reason. Ctrl-C cancels every outstanding task before the driver stops.
"""

from __future__ import annotations

import socket
import time
from typing import Iterator

from edgepick.cluster.executor import Event, ordered
from edgepick.cluster.jobs import Job, JobResult, Row, execute
from edgepick.cluster.nodes import (RAY_NAMESPACE, NodeInfo, cluster_nodes, connect, require_ray,
                                    tag_resource)
from edgepick.errors import EdgepickError
from edgepick.units import mib


def _run(job: Job, seed: list[Row], tracker, after: JobResult | None = None) -> JobResult:
    tracker.start.remote(job.id, socket.gethostname())  # an attempt began (retries count too)
    return execute(job, seed, after)


class _Tracker:
    """Which jobs have started, and how often: Ray tells the driver when a task ends, not when
    it begins."""

    def __init__(self) -> None:
        self.starts: dict[str, int] = {}

    def start(self, job_id: str, node: str) -> None:
        self.starts[job_id] = self.starts.get(job_id, 0) + 1

    def poll(self) -> dict[str, int]:
        return dict(self.starts)


def _check_fits(jobs: list[Job], nodes: list[NodeInfo]) -> None:
    """A task asking more CPUs or memory than any node with its tag offers would wait forever."""
    for job in jobs:
        if not job.device or job.pin_local:
            continue
        mine = [n for n in nodes if n.alive and job.device in n.devices]
        if not any(n.cpus >= job.cpus and (not job.memory or n.memory_bytes >= job.memory)
                   for n in mine):
            best = max(mine, key=lambda n: (n.cpus, n.memory_bytes))
            raise EdgepickError(
                f"{job.label}: needs {job.cpus:g} CPUs"
                + (f" and {mib(job.memory)}" if job.memory else "")
                + f", but the largest node with device tag {job.device} ({best.host}) offers "
                f"{best.cpus:g} CPUs and {mib(best.memory_bytes)}; lower "
                "runtime.threads or start that node with more (--num-cpus)")


def _describe(nodes: list[NodeInfo]) -> str:
    alive = [n for n in nodes if n.alive]
    if not alive:
        return "no node is alive"
    return "nodes: " + "; ".join(f"{n.host} ({', '.join(n.devices) or 'no device tag'})"
                                 for n in alive)


class RayExecutor:
    name = "ray"

    def __init__(self, address: str | None = None, max_retries: int = 2,
                 node_timeout_s: float = 60.0, poll_s: float = 0.5) -> None:
        self.max_retries = max_retries
        self.node_timeout_s = node_timeout_s
        self.poll_s = poll_s
        self._owned = connect(address)  # True when this executor started Ray (and so stops it)

    def close(self) -> None:
        ray = require_ray()

        if self._owned and ray.is_initialized():
            ray.shutdown()

    def wait_for_tags(self, jobs: list[Job]) -> None:
        """Return once every tag has a live node that can hold its jobs; else, after the
        timeout, a one-line error naming the missing tags and the nodes that do exist."""
        tags = {j.device for j in jobs if j.device and not j.pin_local}
        deadline = time.monotonic() + self.node_timeout_s
        while True:
            nodes = cluster_nodes()
            have = {t for n in nodes if n.alive for t in n.devices}
            missing = sorted(tags - have)
            if not missing:
                return _check_fits(jobs, nodes)
            if time.monotonic() >= deadline:
                raise EdgepickError(
                    f"no node carries device tag {', '.join(missing)} after "
                    f"{self.node_timeout_s:.0f} s ({_describe(nodes)}); start one with "
                    f"`edgepick node start --device {missing[0]} --address HEAD`")
            time.sleep(min(1.0, self.poll_s * 2))

    @staticmethod
    def _here():
        """On the driver's own node: a measuring node that dies takes nothing of the driver's."""
        ray = require_ray()

        here = ray.get_runtime_context().get_node_id()
        return ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(here, soft=False)

    def _options(self, job: Job) -> dict:
        opts: dict = {"num_cpus": job.cpus, "max_retries": self.max_retries,
                      "retry_exceptions": False}
        if job.memory:
            opts["memory"] = int(job.memory)
        if job.pin_local:
            opts["scheduling_strategy"] = self._here()
        elif job.device:
            opts["resources"] = {tag_resource(job.device): 1}
        return opts

    def run(self, jobs: list[Job], seeds: dict[str, list[Row]], event: Event) -> Iterator[JobResult]:
        ray = require_ray()

        if not jobs:
            return
        self.wait_for_tags(jobs)
        remote = ray.remote(_run)
        tracker = ray.remote(num_cpus=0)(_Tracker).options(
            namespace=RAY_NAMESPACE, scheduling_strategy=self._here()).remote()
        pending: dict = {}
        refs: dict = {}
        for job in ordered(jobs):
            # Ray starts a task once the task it waits for has returned, and hands it the result.
            args = [job, seeds.get(job.id) or [], tracker]
            if job.after in refs:
                args.append(refs[job.after])
            ref = refs[job.id] = remote.options(**self._options(job)).remote(*args)
            pending[ref] = job
            event(job.id, "queued")
        seen: dict[str, int] = {}
        poll = None
        orphaned_since: dict[str, float] = {}
        # the node list is a call to Ray's GCS: every 5 s, or more often under a short node
        # timeout, so a lost tag's jobs fail within half that timeout of it, not 10 s late
        every = min(5.0, max(0.5, self.node_timeout_s / 2))
        next_check = time.monotonic() + every
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=self.poll_s)
                poll = self._starts(tracker, poll, seen, event)
                for ref in ready:
                    job = pending.pop(ref)
                    res = self._collect(ref, job, seen.get(job.id, 1))
                    event(job.id, "done" if res.ok else "failed")
                    yield res
                if time.monotonic() >= next_check:
                    next_check = time.monotonic() + every
                    for res in self._orphans(pending, orphaned_since):
                        event(res.job_id, "failed")
                        yield res
        except BaseException:  # Ctrl-C or the consumer stopped: nothing keeps running for us
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        finally:
            ray.kill(tracker)

    @staticmethod
    def _starts(tracker, poll, seen: dict[str, int], event: Event):
        """Report the attempts that began since the last look; never waits on the tracker (a
        slow or lost tracker costs the `running` state, not the run)."""
        ray = require_ray()

        if poll is not None:
            done, _ = ray.wait([poll], timeout=0)
            if not done:
                return poll
            try:
                starts = ray.get(poll)
            except ray.exceptions.RayError:
                starts = {}
            for job_id, n in starts.items():
                if n > seen.get(job_id, 0):
                    seen[job_id] = n
                    event(job_id, "running")
        return tracker.poll.remote()

    def _collect(self, ref, job: Job, attempts: int) -> JobResult:
        ray = require_ray()

        try:
            res = ray.get(ref)
        except ray.exceptions.RayError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return JobResult(job.id, False, error=f"{type(exc).__name__} after {attempts} "
                             f"attempt(s) (max_retries={self.max_retries}): {first}"[:500],
                             attempts=attempts)
        res.attempts = attempts
        return res

    def _orphans(self, pending: dict, since: dict[str, float]) -> list[JobResult]:
        """Jobs whose tag lost its last node: failed after the timeout instead of waiting forever."""
        ray = require_ray()

        tags = {j.device for j in pending.values() if j.device and not j.pin_local}
        if not tags:
            return []
        nodes = cluster_nodes()
        alive = {t for n in nodes if n.alive for t in n.devices}
        now = time.monotonic()
        out = []
        for tag in tags:
            if tag in alive:
                since.pop(tag, None)
                continue
            since.setdefault(tag, now)
            if now - since[tag] < self.node_timeout_s:
                continue
            for ref, job in list(pending.items()):
                if job.device == tag:
                    ray.cancel(ref, force=True)
                    pending.pop(ref)
                    out.append(JobResult(job.id, False, error=(
                        f"no node carries device tag {tag} any more (for "
                        f"{self.node_timeout_s:.0f} s; {_describe(nodes)})")))
        return out

