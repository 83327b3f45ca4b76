"""A team of edge models behind one server: one supervised engine per resident
model, each an `EdgePool` (serve/pool/edge.py) with its own admission, liveness, restarts and memory
watchdog, loaded and unloaded within the memory budget by serve/pool/residency.py.

`TeamPool` stands where serve's one pool stands: the handlers see the default model's spec and
the team's readiness; a request's model is chosen by `member_for` (the member the client names
in `model`, else its task's route in deploy.yaml, else the default), and the router gets that
member as its edge (`edge_for`). The answer names its model (`x-edgepick-model`, and `model` in
the body, which the engine fills with its alias). Tokenizer and probe endpoints ask the most
recently used resident member.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

from edgepick.errors import EdgepickError
from edgepick.records.team import DEFAULT_EDGE, EdgeModel, memory_plan
from edgepick.serve.engine.process import EngineSpec
from edgepick.serve.metrics import LATENCY_BUCKETS, ServeMetrics
from edgepick.serve.pool.edge import EdgePool
from edgepick.serve.pool.residency import Resident, Residency, ResidencyEvents
from edgepick.serve.router_api import ServedResponse

log = logging.getLogger("edgepick.serve")
MODEL_HEADER = "x-edgepick-model"
COUNT_DEADLINE_S = 60.0  # a tokenizer call may wait this long for its model to load


@dataclass
class Member:
    """One team model as serve runs it: its engine spec and residency."""

    spec: EngineSpec
    pin: bool = False
    ttl: float | None = None
    need: int | None = None  # measured (deploy.yaml); None: estimated from the file

    def as_edge_model(self, need: int) -> EdgeModel:
        return EdgeModel(name=self.spec.name, path=self.spec.path, sha256="-", pin=self.pin,
                         need_bytes=need)


def file_need(member: Member) -> int:
    """A model without a measured need counts its file (the weights it maps) until it has
    loaded; then its engine's own anonymous memory is added (KV cache, buffers)."""
    return member.need if member.need is not None else os.path.getsize(member.spec.path)


def check_budget(members: list[Member], budget: int | None) -> None:
    """Refuse at start, in one line, a team whose pinned models plus any one on-demand model
    cannot fit (the memory plan of records/team.py, estimated needs filled in)."""
    fit = memory_plan([m.as_edge_model(file_need(m)) for m in members], budget)
    if fit.fits is False:
        raise EdgepickError(f"memory budget: {fit.line()}")


class TeamMetrics(ResidencyEvents):
    """Loads, unloads, load time and requests that waited for a load, per model."""

    def __init__(self, m: ServeMetrics) -> None:
        r = m.registry
        self.m = m
        self.loads = Counter("edgepick_model_loads", "Team model loads by cause (start, "
                             "demand)", ["model", "cause"], registry=r)
        self.unloads = Counter("edgepick_model_unloads", "Team model unloads by reason "
                               "(evicted, idle, stop)", ["model", "reason"], registry=r)
        self.load_seconds = Histogram("edgepick_model_load_seconds", "Team model load time",
                                      ["model"], buckets=LATENCY_BUCKETS, registry=r)
        self.swap_waits = Counter("edgepick_swap_waits", "Requests that waited for their "
                                  "model to load", ["model"], registry=r)
        self.resident = Gauge("edgepick_model_resident", "1 while a team model is loaded",
                              ["model"], registry=r)
        self.pinned = Gauge("edgepick_model_pinned", "1 while a team model is pinned (by "
                            "deploy.yaml or a client's keep_alive)", ["model"], registry=r)

    def loaded(self, name: str, cause: str, seconds: float) -> None:
        self.loads.labels(name, cause).inc()
        self.load_seconds.labels(name).observe(seconds)
        self.resident.labels(name).set(1)
        self.m.events.append((time.time(), "load", f"{name} ({cause}, {seconds:.1f} s)"))

    def unloaded(self, name: str, reason: str) -> None:
        self.unloads.labels(name, reason).inc()
        self.resident.labels(name).set(0)
        self.m.events.append((time.time(), "unload", f"{name} ({reason})"))

    def waited(self, name: str) -> None:
        self.swap_waits.labels(name).inc()


class TeamPool:
    def __init__(self, members: list[Member], *, budget: int | None, group_wait: float,
                 deploy: Any = None, pool_args: dict, embeddings: EngineSpec | None = None,
                 queue: int = 8) -> None:
        self.members = {m.spec.name: m for m in members}
        self.default = members[0].spec.name
        self.deploy = deploy
        self.metrics = ServeMetrics()
        self.pools = {name: EdgePool(m.spec, queue=queue, metrics=self.metrics,
                                     role=f"team:{name}", **pool_args)
                      for name, m in self.members.items()}
        self.embedder = (EdgePool(embeddings, queue=queue, metrics=self.metrics,
                                  role="embedding", **pool_args) if embeddings else None)
        self.team_metrics = TeamMetrics(self.metrics)
        slots = members[0].spec.slots
        self.residency = Residency(
            [Resident(n, file_need(m), m.pin, m.ttl, max_waiting=slots + queue,
                      estimated=m.need is None)
             for n, m in self.members.items()],
            budget, self._load, self._unload, group_wait, self.team_metrics)
        for n, m in self.members.items():
            self.team_metrics.pinned.labels(n).set(1 if m.pin else 0)
        self.status = "loading"
        self.degraded: str | None = None
        self.metrics.slots.set(slots)
        self.metrics.bind_pool(lambda: sum(p.admission.waiting for p in self.pools.values())
                               + sum(r.waiting for r in self.residency.models.values()),
                               lambda: sum(p.admission.busy for p in self.pools.values()),
                               lambda: sum(p.last_memory for p in self.pools.values()))
        self.metrics.active_model.clear()

    # -- what serve's handlers read of a pool --------------------------------------------------
    @property
    def spec(self) -> EngineSpec:
        return self.members[self.default].spec

    @property
    def ready(self) -> bool:
        return self.status in ("ready", "degraded")

    @property
    def current(self) -> EdgePool:
        """The most recently used resident member (tokenizer, props, probes), else the
        default one."""
        loaded = [r for r in self.residency.models.values() if r.state == "loaded"]
        best = max(loaded, key=lambda r: r.last_used, default=None)
        return self.pools[best.name if best else self.default]

    def __getattr__(self, name: str) -> Any:  # n_vocab, echo_limits, props, tokenize, ...
        if name.startswith("_") or name in ("pools", "residency", "members"):
            raise AttributeError(name)
        return getattr(self.current, name)

    def health(self) -> dict:
        out: dict = {"ready": self.ready, "status": self.status,
                     "models": {n: self.state_of(n) for n in self.members}}
        if self.embedder is not None:
            out["embeddings"] = self.embedder.health()
        return out

    def state_of(self, name: str) -> str:
        r = self.residency.models[name]
        pool = self.pools[name]
        if r.state == "loaded" and pool.status not in ("ready", "degraded"):
            return pool.status  # restarting, unresponsive, failed: the member's own word
        return r.state

    def cards(self) -> list[dict]:
        """/v1/models: every member with its state, then the embedding engine."""
        out = [{"id": n, "object": "model", "owned_by": "edgepick", "created": 0,
                "version": m.spec.version, "state": self.state_of(n), "pinned": m.pin,
                "need_bytes": self.residency.models[n].need} for n, m in self.members.items()]
        if self.embedder is not None:
            spec = self.embedder.spec
            out.append({"id": spec.name, "object": "model", "owned_by": "edgepick",
                        "created": 0, "version": spec.version})
        return out

    async def count_tokens(self, text: str) -> int:
        """By the most recently used resident model's tokenizer (the default one, loaded, when
        none is): the prompt cap is checked before the request's member is chosen."""
        return await MemberEdge(self, self.current.spec.name).count_tokens(text)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        if self.embedder is not None:
            await self.embedder.start()
        await self.residency.load_pinned()
        self.status = "ready"
        self.metrics.ready.set(1)

    async def aclose(self) -> None:
        self.status = "stopped"
        self.metrics.ready.set(0)
        await self.residency.unload_all()
        if self.embedder is not None:
            await self.embedder.aclose()

    def background(self) -> list:
        return [self.residency.expire_idle]

    async def _load(self, name: str) -> None:
        pool = self.pools[name]
        await pool.start()
        member, spec = self.members[name], pool.spec
        if member.need is None:  # now measured: the engine's own memory beside the file's
            self.residency.models[name].need = file_need(member) + pool.last_memory
        self.metrics.active_model.labels(spec.name, spec.version).set(1)

    async def _unload(self, name: str) -> None:
        pool = self.pools[name]
        await pool.aclose()
        pool.last_memory = 0
        pool.scorer = None  # closed with the engine; an echo after the next load opens another
        self.metrics.active_model.labels(pool.spec.name, pool.spec.version).set(0)

    # -- choosing a member -------------------------------------------------------------------
    def member_for(self, model: str | None, task: str | None) -> str:
        """The member the client names (NAME or NAME@VERSION), else the task's route in
        deploy.yaml (its cascade's first step, a member or `edge`: the default), else the
        default member."""
        if model:
            name = model if model in self.members else model.rsplit("@", 1)[0]
            if name in self.members:
                return name
        if self.deploy is not None:
            route = self.deploy.first_route(task)
            if route in self.members:
                return route
        return self.default

    def edge_for(self, rr: Any) -> "MemberEdge":
        name = self.member_for(rr.model, rr.task)
        named = bool(rr.model) and name in (rr.model, rr.model.rsplit("@", 1)[0])
        why = f"model:{name}" if named else f"task:{rr.task}" if name != self.default \
            else "default"
        return MemberEdge(self, name, why)


class MemberEdge:
    """The edge a router gets for one request: the chosen member, loaded on demand and
    counted in flight until its answer is complete (so it is never evicted mid-answer)."""

    def __init__(self, team: TeamPool, name: str, why: str = "default") -> None:
        self.team, self.name, self.why = team, name, why  # why: the route reason's words
        self.pool = team.pools[name]

    def __getattr__(self, attr: str) -> Any:  # spec, metrics, ready, n_vocab ... of the member
        if attr in ("team", "name", "pool", "why"):
            raise AttributeError(attr)
        return getattr(self.pool, attr)

    @property
    def ready(self) -> bool:
        return self.team.ready

    def member(self, route: str) -> "MemberEdge | None":
        """Another member's edge (a cascade's next step: route/team_cascade.py), by its name
        or `edge` (the default one); None when the team has no such member."""
        name = self.team.default if route == DEFAULT_EDGE else route
        return MemberEdge(self.team, name) if name in self.team.members else None

    async def count_tokens(self, text: str) -> int:
        res = self.team.residency
        await res.acquire(self.name, time.monotonic() + COUNT_DEADLINE_S)
        try:
            return await self.pool.count_tokens(text)
        finally:
            await res.release(self.name)

    async def forward(self, kind: Any, body: Any, stream: bool, deadline: float,
                      forced: bool = True) -> ServedResponse:
        res = self.team.residency
        await res.acquire(self.name, deadline)
        try:
            resp = await self.pool.forward(kind, body, stream, deadline, forced)
        except BaseException:
            await res.release(self.name)
            raise
        resp.headers[MODEL_HEADER] = self.name
        if resp.chunks is None:
            await res.release(self.name)
            return resp
        closer = resp._closer

        async def close() -> None:
            try:
                if closer is not None:
                    await closer()  # type: ignore[operator]
            finally:
                await res.release(self.name)

        resp._closer = close
        return resp
