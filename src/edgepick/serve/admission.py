"""Bounded admission: at most slots + queue requests are in, the rest are refused at once with a
retry hint, and a resource check before admission can refuse or degrade (seed 000 §4.3, §5.2).

A short queue that answers "busy" is better than one that lets every request pile up until all
of them time out.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from typing import Literal

import psutil
from pydantic import BaseModel, ConfigDict, Field

from edgepick.serve.router_api import DeadlineExceeded, Overloaded, ResourceRefused


class Admission:
    """`slots` requests run at once; `queue` more may wait for a slot; beyond that, 429."""

    def __init__(self, slots: int, queue: int) -> None:
        self.slots = slots
        self.capacity = slots + queue
        self.admitted = 0  # running + waiting
        self.busy = 0  # holding a slot
        self._sem = asyncio.Semaphore(slots)
        self._service_s = 1.0  # moving average of slot holding time, for Retry-After

    @property
    def waiting(self) -> int:
        return self.admitted - self.busy

    def retry_after(self) -> int:
        # roughly when a place frees up: one service time per `slots` requests ahead
        ahead = max(self.admitted - self.slots + 1, 1)
        return max(1, math.ceil(self._service_s * ahead / self.slots))

    def enter(self) -> None:
        """Take a place or raise Overloaded at once; pair with `acquire` then `release`."""
        if self.admitted >= self.capacity:
            raise Overloaded(f"server busy: {self.slots} slots and {self.capacity - self.slots} "
                             "queue places are taken", retry_after=self.retry_after())
        self.admitted += 1

    async def acquire(self, deadline: float) -> float:
        """Wait for a slot until the deadline; returns the time waited."""
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(self._sem.acquire(), max(deadline - t0, 0.0))
        except asyncio.TimeoutError:
            self.admitted -= 1
            raise DeadlineExceeded("deadline passed while waiting in the queue") from None
        except BaseException:
            self.admitted -= 1
            raise
        self.busy += 1
        return time.monotonic() - t0

    def release(self, held_s: float) -> None:
        self.busy -= 1
        self.admitted -= 1
        self._sem.release()
        self._service_s = 0.8 * self._service_s + 0.2 * held_s


class ResourcePolicy(BaseModel):
    """The policy file's `resources:` section: what to do when the host is short of memory or
    busy with other work before a request is admitted (seed 000 §5.2)."""

    model_config = ConfigDict(extra="forbid")

    min_available_mb: float = Field(default=0, ge=0)  # MemAvailable below this: act
    max_load_per_cpu: float | None = Field(default=None, gt=0)  # 1-min load / CPUs above: act
    action: Literal["refuse", "degrade"] = "refuse"
    degrade_max_tokens: int = Field(default=64, ge=1)  # the cap a degraded request runs with
    retry_after_s: int = Field(default=5, ge=1)


class ResourceCheck:
    """Reads free memory and load at most every `every_s`; cheap enough for every request."""

    def __init__(self, policy: ResourcePolicy, every_s: float = 0.5) -> None:
        self.policy = policy
        self.every_s = every_s
        self._at = -math.inf
        self._problem: str | None = None

    def _measure(self) -> str | None:
        p = self.policy
        if p.min_available_mb > 0:
            avail = psutil.virtual_memory().available / 2**20
            if avail < p.min_available_mb:
                return f"available memory {avail:.0f} MiB is below {p.min_available_mb:.0f} MiB"
        if p.max_load_per_cpu is not None:
            load = os.getloadavg()[0] / (os.cpu_count() or 1)
            if load > p.max_load_per_cpu:
                return f"load {load:.2f} per CPU is above {p.max_load_per_cpu:.2f}"
        return None

    def problem(self) -> str | None:
        now = time.monotonic()
        if now - self._at >= self.every_s:
            self._problem, self._at = self._measure(), now
        return self._problem

    def apply(self, body: dict) -> tuple[dict, str | None]:
        """The body to run (capped when degraded) and the degradation reason, or raise."""
        problem = self.problem()
        if problem is None:
            return body, None
        if self.policy.action == "refuse":
            raise ResourceRefused(f"refused before admission: {problem}",
                                  retry_after=self.policy.retry_after_s)
        cap = self.policy.degrade_max_tokens
        body = dict(body)
        for key in ("max_tokens", "max_completion_tokens"):
            if key in body and body[key] is not None:
                body[key] = min(int(body[key]), cap)
        body.setdefault("max_tokens", cap)
        return body, problem
