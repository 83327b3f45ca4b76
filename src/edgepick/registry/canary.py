"""The canary after a live update (seed 001 §6.4: keep the old version until the new one is
proven): for a window after a version is activated on a running server, its live figures, the
ones `edgepick monitor --check` reads (5xx error rate, unacceptable rate of sampled outputs,
TTFT P99, engine memory), are set against the previous version's over the time it served before
the switch. If any is worse beyond its interval, the server rolls back to the previous version by
itself; the previous version cannot be removed while the window is open. The rollback and its
reason go into the registry's events and into /metrics (`edgepick_canary_rollbacks_total`,
`edgepick_canary_open`).

"Worse" is read as monitor reads it: a rate is worse when the new version's 95 % Wilson interval
lies wholly above the previous version's; TTFT P99 and memory when the new figure is more than
`latency_tolerance` times the previous one. A figure needs `min_requests` (rates of requests,
TTFT) or `min_sampled` (sampled outputs) on both sides before it can say anything.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable
from weakref import WeakKeyDictionary

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from edgepick.evaluate.intervals import wilson
from edgepick.monitor.live import Scrape, parse, quantile
from edgepick.records.update import CanaryPolicy
from edgepick.registry.activation import rollback
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


def _rate_worse(k_new: float, n_new: float, k_old: float, n_old: float,
                least: int) -> tuple[float, float, float, float] | None:
    if n_new < least or n_old < least:
        return None
    lo_new, _ = wilson(int(k_new), int(n_new))
    _, hi_old = wilson(int(k_old), int(n_old))
    return (k_new / n_new, lo_new, k_old / n_old, hi_old) if lo_new > hi_old else None


def worse(new: Figures, old: Figures, policy: CanaryPolicy, peak_memory: float) -> list[str]:
    """Each figure in which the new version is worse, as "figure: why"."""
    out = []
    got = _rate_worse(new.errors, new.requests, old.errors, old.requests, policy.min_requests)
    if got:
        out.append("error_rate: {:.1%} (95% interval from {:.1%}) against {:.1%} (up to {:.1%})"
                   .format(*got))
    got = _rate_worse(new.unacceptable, new.sampled, old.unacceptable, old.sampled,
                      policy.min_sampled)
    if got:
        out.append("unacceptable_rate: {:.1%} of sampled outputs (from {:.1%}) against {:.1%} "
                   "(up to {:.1%})".format(*got))
    tol = policy.latency_tolerance
    if new.requests >= policy.min_requests and old.requests >= policy.min_requests \
            and new.ttft_p99_s and old.ttft_p99_s and new.ttft_p99_s > old.ttft_p99_s * tol:
        out.append(f"ttft_p99: {new.ttft_p99_s * 1000:.0f} ms against {old.ttft_p99_s * 1000:.0f}"
                   f" ms (× {tol:g} allowed)")
    if old.memory and peak_memory > old.memory * tol:
        out.append(f"memory: {peak_memory / 2**20:.0f} MiB against {old.memory / 2**20:.0f} MiB "
                   f"(× {tol:g} allowed)")
    return out


class Canary:
    def __init__(self, registry: Registry, name: str, version: str, previous: str,
                 policy: CanaryPolicy, metrics: CollectorRegistry, before: Scrape,
                 since: Scrape | None, switch: Callable[[str, str, str], Awaitable[None]],
                 clock: Callable[[], float] = time.time) -> None:
        self.registry, self.name, self.version, self.previous = registry, name, version, previous
        self.policy, self.metrics, self.switch, self.clock = policy, metrics, switch, clock
        self.before = before
        self.old = figures(before.since(since))
        self.until = clock() + policy.window_s
        self.outcome: str | None = None  # "passed" | "rolled back: …"

    def open(self) -> None:
        until = self.until

        def mark(entry) -> None:
            entry.canary = CanaryWindow(version=self.version, previous=self.previous, until=until)
            add_event(entry, "canary-open", self.version,
                      f"watching for {self.policy.window_s:g} s against {self.previous}")

        self.registry.update_entry(self.name, mark)
        _meters_of(self.metrics)[1].labels(self.version).set(1)

    def check(self, peak_memory: float) -> list[str]:
        now = snapshot(self.metrics)
        return worse(figures(now.since(self.before)), self.old, self.policy, peak_memory)

    async def run(self) -> str:
        """Watch until the window closes or a rollback; `open()` must have been called."""
        peak = 0.0
        try:
            while self.clock() < self.until:
                await asyncio.sleep(min(self.policy.check_every_s,
                                        max(self.until - self.clock(), 0.0)))
                if self.registry.model(self.name).active != self.version:
                    self._close("canary-ended", self.version, "no longer active")
                    self.outcome = "ended"
                    return self.outcome
                peak = max(peak, figures(snapshot(self.metrics)).memory)
                bad = self.check(peak)
                if bad:
                    return await self._roll_back("; ".join(bad))
            self._close("canary-passed", self.version, "no figure worse than "
                        f"{self.previous}'s over {self.policy.window_s:g} s")
            self.outcome = "passed"
            return self.outcome
        finally:
            _meters_of(self.metrics)[1].labels(self.version).set(0)

    async def _roll_back(self, reason: str) -> str:
        log.warning("canary: %s@%s serves worse than %s (%s); rolling back", self.name,
                    self.version, self.previous, reason)

        async def start(version: str, path: str) -> None:
            await self.switch(path, version, "canary-rollback")

        await rollback(self.registry, self.name, start, reason=f"canary: {reason}")
        counter = _meters_of(self.metrics)[0]
        for part in reason.split("; "):
            counter.labels(self.version, part.split(":")[0]).inc()
        self._close("canary-rollback", self.version, reason)
        self.outcome = f"rolled back: {reason}"
        return self.outcome

    def _close(self, action: str, version: str, detail: str) -> None:
        def close(entry) -> None:
            entry.canary = None
            add_event(entry, action, version, detail)

        self.registry.update_entry(self.name, close)


def watch(owner: Any, registry: Registry, name: str, version: str, previous: str,
          settings: dict | None, metrics: CollectorRegistry, before: Scrape,
          switch: Callable[[str, str, str], Awaitable[None]]) -> Canary | None:
    """Start watching `version` (just activated; `before` was scraped before the switch) when
    the activation asked for a canary; the task is kept on `owner` so it is not collected."""
    if not settings or not previous:
        _marks[metrics] = before
        return None
    policy = CanaryPolicy.model_validate(settings)
    if not policy.window_s:
        return None
    canary = Canary(registry, name, version, previous, policy, metrics, before,
                    _marks.get(metrics), switch)
    _marks[metrics] = before
    canary.open()  # in the registry before the activation answers
    owner.canary = canary
    owner.canary_task = asyncio.get_running_loop().create_task(canary.run())
    return canary
