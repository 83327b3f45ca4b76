"""Bounded admission: at most slots + queue requests are in, the rest are refused at once with a
retry hint, and a resource check before admission can refuse or degrade (seed 000 §4.3, §5.2).

A short queue that answers "busy" is better than one that lets every request pile up until all
of them time out.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
import os
import time
from typing import Any, Literal

import psutil
from pydantic import BaseModel, ConfigDict, Field

from edgepick.serve.request_models import value
from edgepick.serve.router_api import BadRequest, DeadlineExceeded, Overloaded, ResourceRefused


class Admission:
    """`slots` engine slots; `queue` more requests may wait for theirs; beyond that, 429.

    A request takes as many slots as the engine will use for it (`n` completions of each prompt:
    llama-server runs each in a slot of its own), all at once, so the engine never holds a task
    edgepick does not count and nothing waits unseen inside it. Waiters are served first come,
    first served: a request needing two slots is not overtaken forever by ones needing one."""

    def __init__(self, slots: int, queue: int) -> None:
        self.slots = slots
        self.capacity = slots + queue  # requests: a running one holds at least one slot
        self.admitted = 0  # requests running + waiting
        self.running = 0  # requests holding their slots
        self.busy = 0  # slots held
        self._waiters: deque[tuple[int, asyncio.Future]] = deque()
        self._service_s = 1.0  # moving average of slot holding time, for Retry-After

    @property
    def waiting(self) -> int:
        return self.admitted - self.running

    @property
    def free(self) -> int:
        return self.slots - self.busy

    def retry_after(self) -> int:
        # roughly when a place frees up: one service time per `slots` requests ahead
        ahead = max(self.admitted - self.slots + 1, 1)
        return max(1, math.ceil(self._service_s * ahead / self.slots))

    def check_size(self, n: int) -> None:
        if n > self.slots:
            raise BadRequest(f"this request needs {n} engine slots (n × prompts) and this "
                             f"server has {self.slots} (--slots); ask for at most {self.slots}",
                             param="n")

    def enter(self, n: int = 1) -> None:
        """Take a place or raise Overloaded at once; pair with `acquire` then `release`."""
        self.check_size(n)
        if self.admitted >= self.capacity:
            raise Overloaded(f"server busy: {self.slots} slots and {self.capacity - self.slots} "
                             "queue places are taken", retry_after=self.retry_after())
        self.admitted += 1

    async def acquire(self, deadline: float, n: int = 1) -> float:
        """Wait for `n` slots until the deadline; returns the time waited."""
        t0 = time.monotonic()
        if not self._waiters and self.free >= n:
            self._take(n)
            return 0.0
        fut = asyncio.get_running_loop().create_future()
        entry = (n, fut)
        self._waiters.append(entry)
        try:
            await asyncio.wait_for(asyncio.shield(fut), max(deadline - t0, 0.0))
        except BaseException as exc:
            if fut.done() and not fut.cancelled():
                self._give(n)  # granted as the wait ended: hand the slots on
            else:
                fut.cancel()
                self._waiters.remove(entry)
                self._wake()  # a large request leaving the head may let smaller ones in
            self.admitted -= 1
            if isinstance(exc, asyncio.TimeoutError):
                raise DeadlineExceeded("deadline passed while waiting in the queue") from None
            raise
        return time.monotonic() - t0

    def _take(self, n: int) -> None:
        self.busy += n
        self.running += 1

    def _give(self, n: int) -> None:
        self.busy -= n
        self.running -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self._waiters[0][0] <= self.free:
            n, fut = self._waiters.popleft()
            self._take(n)
            fut.set_result(None)

    def release(self, held_s: float, n: int = 1) -> None:
        self.admitted -= 1
        self._service_s = 0.8 * self._service_s + 0.2 * held_s
        self._give(n)


def slots_needed(request: BaseModel | dict) -> int:
    """Engine slots a request takes: `n` completions of each of its prompts (a completion's
    `prompt`, or an embedding's `input`, may be a list of prompts; a list of token ids is one
    prompt)."""
    n = value(request, "n")
    if n is None:
        n = 1
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise BadRequest("'n' must be a positive integer", param="n")
    prompt = value(request, "prompt")
    if prompt is None:
        prompt = value(request, "input")
    prompts = 1
    if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int):
        prompts = len(prompt)
    return n * prompts


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

    def apply(self, request: Any) -> tuple[Any, str | None]:
        """The request to run (a request model or a body dict; capped when degraded) and the
        degradation reason, or raise."""
        problem = self.problem()
        if problem is None:
            return request, None
        if self.policy.action == "refuse":
            raise ResourceRefused(f"refused before admission: {problem}",
                                  retry_after=self.policy.retry_after_s)
        cap = self.policy.degrade_max_tokens
        capped = {key: min(int(v), cap) for key in ("max_tokens", "max_completion_tokens")
                  if (v := value(request, key)) is not None}
        capped.setdefault("max_tokens", cap)
        if isinstance(request, dict):
            return dict(request, **capped), problem
        return request.model_copy(update=capped), problem


class Held:
    """`async with`: one admission place and `n` slots, released on exit."""

    def __init__(self, admission: Admission, deadline: float, n: int) -> None:
        self.admission, self.deadline, self.n = admission, deadline, n
        self.wait_s = 0.0

    async def __aenter__(self) -> "Held":
        self.admission.enter(self.n)
        self.wait_s = await self.admission.acquire(self.deadline, self.n)
        self._t0 = time.monotonic()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.admission.release(time.monotonic() - self._t0, self.n)
