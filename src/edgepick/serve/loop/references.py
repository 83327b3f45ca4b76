"""Cloud references for sampled traffic: a sampled request is answered once more by
the cloud, off the request's path, and that answer becomes the item's reference, so the sample
is a complete eval item for the next selection round.

Bounded three ways: a rate (answers per minute), a cost (billed tokens, or money with a price,
per hour) and a queue (items waiting; beyond it they are dropped, never waited for). An
edge-only task (deploy.yaml `edge_only_tasks`, seed 003 privacy) is never sent. Every outcome is
counted in `edgepick_sample_references_total{outcome}`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import httpx

from edgepick.errors import InputError
from edgepick.evaluate.items import EvalItem
from edgepick.records.model_ref import parse_endpoint
from edgepick.serve.loop.sampling import ReferencePolicy, Sampler, SamplingPolicy
from edgepick.yaml_input import validate_input

log = logging.getLogger("edgepick.serve")
PATHS = {"chat": "/chat/completions", "completion": "/completions"}
# fields of the client's request that shape the answer; the rest (stream, n, logprobs, …) do not
KEEP = ("messages", "prompt", "response_format", "tools", "tool_choice", "stop")


@dataclass
class CloudTarget:
    url: str  # ends in /v1
    model: str | None = None
    api_key_env: str | None = "EDGEPICK_CLOUD_API_KEY"


def reference_value(task: str, text: str) -> tuple[Any, str | None]:
    """The cloud's answer in the form the item's task needs, or (None, why not)."""
    t = text.strip()
    if not t:
        return None, "the cloud answered nothing"
    if task == "extraction":
        body = t.strip("`").removeprefix("json").strip() if t.startswith("```") else t
        try:
            value = json.loads(body)
        except ValueError:
            return None, "the cloud's answer is not a JSON object"
        return (value, None) if isinstance(value, dict) else (None, "not a JSON object")
    if task in ("tool_call", "classification"):
        # a tool call needs its schema checked, a label the item's label set: neither is known
        return None, f"a live '{task}' item needs its reference set by a person"
    return t, None


class ReferenceTaker:
    def __init__(self, sampler: Sampler, cloud: CloudTarget, policy: ReferencePolicy,
                 metrics: Any = None) -> None:
        self.sampler = sampler
        self.cloud = cloud
        self.policy = policy
        self.metrics = metrics
        self.queue: asyncio.Queue | None = None
        self._sent: deque[float] = deque()  # request times in the last minute
        self._billed: deque[tuple[float, int]] = deque()  # (time, tokens) in the last hour
        self.sent_tasks: list[str] = []  # what reached the cloud, for tests and logs

    def _count(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.references.labels(outcome).inc()

    def submit(self, item: EvalItem, kind: str, body: dict, *, edge_only: bool) -> bool:
        """Queue `item` for a reference; False when it will not get one."""
        if edge_only:
            self._count("edge_only")
            return False
        if self.queue is None:
            self.queue = asyncio.Queue(self.policy.queue)
        try:
            self.queue.put_nowait((item, kind, body))
        except asyncio.QueueFull:
            self._count("dropped")
            return False
        return True

    def _capped(self, now: float) -> str | None:
        while self._sent and now - self._sent[0] > 60:
            self._sent.popleft()
        while self._billed and now - self._billed[0][0] > 3600:
            self._billed.popleft()
        if len(self._sent) >= self.policy.max_per_minute:
            return "rate_cap"
        tokens = sum(n for _, n in self._billed)
        if tokens >= self.policy.max_tokens_per_hour:
            return "cost_cap"
        p = self.policy
        if p.price_per_1k_tokens is not None and p.max_cost_per_hour is not None \
                and tokens / 1000 * p.price_per_1k_tokens >= p.max_cost_per_hour:
            return "cost_cap"
        return None

    def payload(self, item: EvalItem, kind: str, body: dict) -> dict:
        out = {k: body[k] for k in KEEP if k in body}
        if kind == "chat":
            out["messages"] = item.chat_messages()
        out.update(stream=False, temperature=0, max_tokens=self.policy.max_tokens)
        if self.cloud.model:
            out["model"] = self.cloud.model
        return out

    async def answer(self, client: httpx.AsyncClient, item: EvalItem, kind: str,
                     body: dict) -> None:
        now = time.monotonic()
        cap = self._capped(now)
        if cap is not None:
            self._count(cap)
            self.sampler.set_reference(item.id, None, "cloud", error=f"no reference: {cap}")
            return
        self._sent.append(now)
        key = os.environ.get(self.cloud.api_key_env or "", "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.sent_tasks.append(item.task)
        try:
            resp = await client.post(self.cloud.url.rstrip("/") + PATHS[kind],
                                     json=self.payload(item, kind, body), headers=headers,
                                     timeout=self.policy.timeout_s)
            resp.raise_for_status()
            data = resp.json()
            c0 = (data.get("choices") or [{}])[0]
            text = (c0.get("message") or {}).get("content") if kind == "chat" else c0.get("text")
            usage = data.get("usage") or {}
        except (httpx.HTTPError, ValueError, AttributeError, IndexError) as exc:
            self._count("failed")
            self.sampler.set_reference(item.id, None, "cloud",
                                       error=f"cloud failed ({type(exc).__name__})")
            return
        billed = int(usage.get("total_tokens") or 0) or \
            (len(json.dumps(item.chat_messages())) + len(text or "")) // 4  # unknown: ~4 B/token
        self._billed.append((time.monotonic(), billed))
        value, why = reference_value(item.task, str(text or ""))
        self._count("answered" if value is not None else "failed")
        self.sampler.set_reference(item.id, self.sampler.redactor.value(value), "cloud", error=why)

    async def run(self) -> None:
        if self.queue is None:
            self.queue = asyncio.Queue(self.policy.queue)
        try:
            async with httpx.AsyncClient() as client:
                while True:
                    item, kind, body = await self.queue.get()
                    try:
                        await self.answer(client, item, kind, body)
                    except Exception:  # one bad answer must not stop the references
                        log.exception("cloud reference for %s", item.id)
                        self.sampler.set_reference(item.id, None, "cloud", error="failed")
        finally:  # stopping: the items still waiting are written without a reference
            if self.sampler.file is not None:
                self.sampler.file.release_all("no reference: serve stopped first")


def cloud_for(settings: Any, policy: Any, deploy: Any) -> CloudTarget | None:
    """The cloud serve was given (--cloud, deploy.yaml's cloud, the policy's route.cloud), or
    None, also under deploy.yaml's `network: offline`."""
    if deploy is not None and getattr(deploy, "network", "online") == "offline":
        return None
    if getattr(settings, "cloud", None):
        url, model = parse_endpoint(settings.cloud)
        return CloudTarget(url, model)
    if deploy is not None and deploy.cloud is not None:
        return CloudTarget(deploy.cloud.url, deploy.cloud.model, deploy.cloud.api_key_env)
    route = getattr(policy, "route", None)
    cloud = route.get("cloud") if isinstance(route, dict) else None
    if isinstance(cloud, dict) and cloud.get("url"):
        return CloudTarget(str(cloud["url"]), cloud.get("model"),
                           cloud.get("api_key_env", "EDGEPICK_CLOUD_API_KEY"))
    return None


def sampler_for(settings: Any, policy: Any, deploy: Any, metrics: Any) -> Sampler:
    """The sampler serve runs: the policy file's `sampling:` section (validated here, errors
    naming the file), deploy.yaml's edge-only tasks, and a cloud reference taker when a cloud
    is configured and the sampled items are written."""
    section = (getattr(policy, "extra", None) or {}).get("sampling")
    try:
        sp = SamplingPolicy() if section is None else validate_input(
            SamplingPolicy, section, settings.policy)
    except InputError as exc:
        raise InputError(settings.policy, exc.problem,
                         field="sampling" + (f".{exc.field}" if exc.field else "")) from None
    edge_only = list(getattr(deploy, "edge_only_tasks", []) or [])
    sampler = Sampler(settings.sample_rate, settings.sample_out, metrics=metrics, policy=sp,
                      edge_only_tasks=edge_only)
    cloud = cloud_for(settings, policy, deploy)
    if cloud is not None and sp.references.enabled and settings.sample_out:
        sampler.references = ReferenceTaker(sampler, cloud, sp.references, metrics)
    return sampler
