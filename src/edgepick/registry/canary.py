"""The canary after a live update (seed 001 §6.4: keep the old version until the new one is
proven): for a window after a version is activated on a running server, its live figures, the
ones `edgepick monitor --check` reads (5xx error rate, unacceptable rate of sampled outputs,
TTFT P99, engine memory), are set against the previous version's over the time it served before
the switch, and, when the activation carries eval items, so are both versions' answers to them
(registry/canary_probe.py: the quality probe, for traffic nobody scores). If any is worse beyond
its interval, the server rolls back to the previous version by itself; the previous version
cannot be removed while the window is open. The rollback and its reason go into the registry's
events and into /metrics (`edgepick_canary_rollbacks_total`, `edgepick_canary_open`).

At the window's end the canary says `passed` only when every figure it watches was measured on
enough requests for its interval to exclude "worse than the previous version"
(registry/canary_verdict.py); otherwise `undetermined`, naming each figure and how many more
requests would settle it. Undetermined keeps the new version serving: nothing showed it worse.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable
from weakref import WeakKeyDictionary

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from edgepick.errors import EdgepickError
from edgepick.monitor.live import Scrape, parse, quantile
from edgepick.records.update import CanaryPolicy
from edgepick.registry import canary_probe, canary_verdict as cv
from edgepick.registry.activation import rollback
from edgepick.registry.canary_probe import ProbeResult
from edgepick.registry.canary_verdict import Judgement
from edgepick.registry.store import CanaryWindow, Registry, add_event

log = logging.getLogger("edgepick.registry")
# the scrape taken at each server's last canary switch: where "the previous version" began
_marks: "WeakKeyDictionary[CollectorRegistry, Scrape]" = WeakKeyDictionary()
_meters: "WeakKeyDictionary[CollectorRegistry, tuple[Counter, Gauge]]" = WeakKeyDictionary()


def _meters_of(reg: CollectorRegistry) -> tuple[Counter, Gauge]:
    if reg not in _meters:
        _meters[reg] = (
            Counter("edgepick_canary_rollbacks", "Automatic rollbacks after an update, by the "
                    "version rolled back and the figure that was worse",
                    ["version", "figure"], registry=reg),
            Gauge("edgepick_canary_open", "1 while a newly activated version is under watch",
                  ["version"], registry=reg))
    return _meters[reg]


def snapshot(reg: CollectorRegistry) -> Scrape:
    return parse(generate_latest(reg).decode("utf-8"))


@dataclass
class Figures:
    requests: float
    errors: float
    sampled: float
    unacceptable: float
    ttft_p99_s: float | None
    memory: float


def figures(s: Scrape) -> Figures:
    rows = s.labelled("edgepick_requests_total")
    return Figures(
        requests=sum(v for _, v in rows),
        errors=sum(v for lb, v in rows if lb.get("status", "").startswith("5")),
        sampled=s.total("edgepick_sampled_outputs_total"),
        unacceptable=s.total("edgepick_sampled_outputs_total", verdict="unacceptable"),
        ttft_p99_s=quantile(0.99, s.buckets("edgepick_ttft_seconds")),
        memory=s.total("edgepick_engine_memory_bytes"))


def judge(new: Figures, old: Figures, policy: CanaryPolicy, peak_memory: float,
          ttft_buckets: list[tuple[float, float]] | None = None,
          probe: tuple[ProbeResult, ProbeResult] | None = None) -> list[Judgement]:
    """Every watched figure's judgement. The sampled unacceptable rate is watched only when
    traffic is scored; memory only when the engine reports it; the probe when it ran."""
    out = [cv.rate("error_rate", new.errors, new.requests, old.errors, old.requests,
                   policy.min_requests, "requests with a 5xx")]
    if new.sampled or old.sampled:
        out.append(cv.rate("unacceptable_rate", new.unacceptable, new.sampled, old.unacceptable,
                           old.sampled, policy.min_sampled, "sampled outputs unacceptable"))
    if probe is not None:
        was, now = probe
        j = cv.rate("probe", now.bad, now.answered, was.bad, was.answered, 1,
                    "probe answers unacceptable")
        if now.examples and j.state == "worse":
            j.detail += "; e.g. " + "; ".join(now.examples)
        pairs, seen = cv.paired(was.scores, now.scores)
        if pairs == "worse" and j.state != "worse":  # the rates overlap, the pairs do not
            j = Judgement("probe", "worse", f"{seen}; unacceptable {now.bad}/{now.answered} "
                          f"against {was.bad}/{was.answered}")
        elif was.scores and now.scores:
            j.detail += f"; {seen}"
            if pairs == "undetermined" and j.state == "not_worse":  # lower, not yet settled
                j.state = "undetermined"
        out.append(j)
    out.append(cv.ttft(ttft_buckets or [], new.requests, new.ttft_p99_s, old.ttft_p99_s,
                       old.requests, policy.min_requests, policy.latency_tolerance))
    mem = cv.memory(peak_memory, old.memory, policy.latency_tolerance)
    if mem is not None:
        out.append(mem)
    if not new.sampled and not old.sampled and probe is None:
        out.append(Judgement("quality", "undetermined", "no output was scored: serve with "
                             "--sample-rate, or activate with probe items (models update "
                             "--deploy)"))
    return out


def worse(new: Figures, old: Figures, policy: CanaryPolicy, peak_memory: float,
          ttft_buckets: list[tuple[float, float]] | None = None,
          probe: tuple[ProbeResult, ProbeResult] | None = None) -> list[str]:
    """Each figure in which the new version is worse, as "figure: why"."""
    return [j.line() for j in judge(new, old, policy, peak_memory, ttft_buckets, probe)
            if j.state == "worse"]


Prober = Callable[[str], Awaitable[ProbeResult]]


class Canary:
    def __init__(self, registry: Registry, name: str, version: str, previous: str,
                 policy: CanaryPolicy, metrics: CollectorRegistry, before: Scrape,
                 since: Scrape | None, switch: Callable[[str, str, str], Awaitable[None]],
                 clock: Callable[[], float] = time.time, prober: Prober | None = None,
                 old_probe: ProbeResult | None = None) -> None:
        self.registry, self.name, self.version, self.previous = registry, name, version, previous
        self.policy, self.metrics, self.switch, self.clock = policy, metrics, switch, clock
        self.before = before
        self.old = figures(before.since(since))
        self.until = clock() + policy.window_s
        self.prober, self.old_probe = prober, old_probe
        self.probe: tuple[ProbeResult, ProbeResult] | None = None
        self.outcome: str | None = None  # "passed" | "undetermined: …" | "rolled back: …"
        self.judgements: list[Judgement] = []

    def open(self) -> None:
        until = self.until

        def mark(entry) -> None:
            entry.canary = CanaryWindow(version=self.version, previous=self.previous, until=until)
            add_event(entry, "canary-open", self.version,
                      f"watching for {self.policy.window_s:g} s against {self.previous}")

        self.registry.update_entry(self.name, mark)
        _meters_of(self.metrics)[1].labels(self.version).set(1)

    def _file_bytes(self, version: str) -> int:
        try:
            return self.registry.path_of(self.name, version).stat().st_size
        except (OSError, EdgepickError):
            return 0

    def check(self, peak_memory: float) -> list[str]:
        since = snapshot(self.metrics).since(self.before)
        old = self.old
        if peak_memory and old.memory:
            # The engine's gauge counts anonymous memory only: a version whose weights
            # llama.cpp repacks (Q4_0 on AVX2) holds them there, one that maps them holds file
            # pages it reads every token. Each side adds its mapped file, so that a Q2_K build
            # (Q4_0 inside, repacked: 93 MiB anonymous) is not "worse" than a Q8_0 one (49 MiB
            # anonymous, but 138 MiB of file read per token). An upper bound for the repacking
            # side: its originals are read once, at load.
            peak_memory += self._file_bytes(self.version)
            old = dataclasses.replace(old, memory=old.memory + self._file_bytes(self.previous))
        self.judgements = judge(figures(since), old, self.policy, peak_memory,
                                since.buckets("edgepick_ttft_seconds"), self.probe)
        return [j.line() for j in self.judgements if j.state == "worse"]

    async def run(self) -> str:
        """Watch until the window closes or a rollback; `open()` must have been called."""
        peak = 0.0
        try:
            if self.prober is not None and self.old_probe is not None:
                self.probe = (self.old_probe, await self.prober(self.version))
                log.info("canary probe: %s %s, %s %s", self.previous, self.old_probe.summary(),
                         self.version, self.probe[1].summary())
            while True:
                if self.registry.model(self.name).active != self.version:
                    self._close("canary-ended", self.version, "no longer active")
                    self.outcome = "ended"
                    return self.outcome
                peak = max(peak, figures(snapshot(self.metrics)).memory)
                bad = self.check(peak)
                if bad:
                    return await self._roll_back("; ".join(bad))
                if self.clock() >= self.until:
                    break
                await asyncio.sleep(min(self.policy.check_every_s,
                                        max(self.until - self.clock(), 0.0)))
            return self._verdict()
        finally:
            _meters_of(self.metrics)[1].labels(self.version).set(0)

    def _verdict(self) -> str:
        open_ = [j for j in self.judgements if j.state != "not_worse"]
        if not open_:
            self._close("canary-passed", self.version, f"over {self.policy.window_s:g} s, every "
                        f"watched figure's interval excludes worse than {self.previous}: "
                        + "; ".join(j.line() for j in self.judgements))
            self.outcome = "passed"
            return self.outcome
        why = "; ".join(j.line() for j in open_)
        log.warning("canary: %s@%s undetermined after %g s (%s); it keeps serving", self.name,
                    self.version, self.policy.window_s, why)
        self._close("canary-undetermined", self.version, why)
        self.outcome = f"undetermined: {why}"
        return self.outcome

    async def _roll_back(self, reason: str) -> str:
        log.warning("canary: %s@%s serves worse than %s (%s); rolling back", self.name,
                    self.version, self.previous, reason)

        async def start(version: str, path: str) -> None:
            await self.switch(path, version, "canary-rollback")

        await rollback(self.registry, self.name, start, reason=f"canary: {reason}")
        counter = _meters_of(self.metrics)[0]
        for j in self.judgements:
            if j.state == "worse":
                counter.labels(self.version, j.figure).inc()
        self._close("canary-rollback", self.version, reason)
        self.outcome = f"rolled back: {reason}"
        return self.outcome

    def _close(self, action: str, version: str, detail: str) -> None:
        def close(entry) -> None:
            entry.canary = None
            add_event(entry, action, version, detail)

        self.registry.update_entry(self.name, close)


async def probe_before(pool: Any, body: dict) -> tuple[Prober | None, ProbeResult | None]:
    """The quality probe's first half, run on what serves now, before the switch: the items
    the activation carries, answered by the current version. (None, None) when there is none."""
    settings = body.get("canary")
    items = canary_probe.items_of(body) if settings else []
    if not items or not pool.spec.version:
        return None, None
    policy = CanaryPolicy.model_validate(settings)
    if not policy.window_s or not policy.probe_items:
        return None, None
    items = items[:policy.probe_items]

    async def prober(version: str) -> ProbeResult:
        return await canary_probe.probe(pool, version, items, policy.probe_max_tokens)

    return prober, await prober(pool.spec.version)


def watch(owner: Any, registry: Registry, name: str, version: str, previous: str,
          settings: dict | None, metrics: CollectorRegistry, before: Scrape,
          switch: Callable[[str, str, str], Awaitable[None]], prober: Prober | None = None,
          old_probe: ProbeResult | None = None) -> Canary | None:
    """Start watching `version` (just activated; `before` was scraped before the switch) when
    the activation asked for a canary; the task is kept on `owner` so it is not collected."""
    if not settings or not previous:
        _marks[metrics] = before
        return None
    policy = CanaryPolicy.model_validate(settings)
    if not policy.window_s:
        return None
    canary = Canary(registry, name, version, previous, policy, metrics, before,
                    _marks.get(metrics), switch, prober=prober, old_probe=old_probe)
    _marks[metrics] = before
    canary.open()  # in the registry before the activation answers
    owner.canary = canary
    owner.canary_task = asyncio.get_running_loop().create_task(canary.run())
    return canary
