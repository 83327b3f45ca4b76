"""The router inside `edgepick serve`: edge first with cloud fallback, cloud first with edge
degrade, per-task routes, or a confidence cascade (seed 000 §6.3-6.4, seed 001 §6.3).

Offline-safe by construction: every request has an ordered list of allowed paths; a failing,
slow or unreachable path hands over to the next, and the request fails only when every allowed
path failed, with an error that names each path and why. Route labels (the `x-edgepick-route`
header): `edge`, `cloud`, `edge-fallback` (the edge answered because the cloud could not or was
offline), `cloud-escalated` (the cloud answered because the edge failed, was overloaded, was
unsure or broke the format) and `edge-escalated` (a team cascade's later edge step answered:
route/team_cascade.py).
"""

from __future__ import annotations

import importlib
import logging
from typing import AsyncIterator, Callable

from edgepick.backends import llama_server_client as lsc
from edgepick.errors import EdgepickError
from edgepick.records.deploy import DeployConfig
from edgepick.route.answers import answer_logprobs, answer_text, ask_logprobs, strip_logprobs
from edgepick.route.cloud import CloudClient, CloudError
from edgepick.route.confidence import confidence
from edgepick.route.route_plan import (Plan, all_failed, as_client_wants, route_label,
                                      short_reason, why_failed)
from edgepick.route.route_policy import Latches, RoutePolicy, Rule, policy_from
from edgepick.route.serve_context import ContextFitter
from edgepick.route.probes import DeviceSignals, NetworkProbe
from edgepick.route.team_cascade import TeamCascade
from edgepick.serve.http.forced_routes import FORCE_HEADER
from edgepick.serve.router_api import (BadRequest, EdgeOnlyRouter, EngineUnavailable, Routed,
                                       RouteRequest, ServedResponse, ServeError, declared_task)

log = logging.getLogger("edgepick.route")


def from_section(section: dict | None, deploy: DeployConfig | None = None):
    """The `edgepick.routers` entry point `default`: serve calls it with the policy file's
    `route:` section (None when there is none; `--mode`/`--cloud` already merged in) and the
    deploy.yaml. The edge/cloud defaults live here: the deploy's cloud endpoint when the section
    names none, and a hybrid decision's per-task routes (`by_task`) when the section sets no
    mode. No section and nothing routed to a cloud: everything on the edge."""
    cloud_tasks = [r.task for r in (deploy.routes if deploy else []) if r.route == "cloud"]
    if section is None and not cloud_tasks and deploy is not None and deploy.is_team \
            and deploy.cascades:  # the team's cascades run, and nothing else escalates
        section = {"mode": "by_task", "escalate_low_confidence": False}
    if section is None:
        if not cloud_tasks:
            return EdgeOnlyRouter()
        if deploy is None or deploy.cloud is None:
            # a hybrid decision made against a local reference: nothing to send those tasks to
            log.warning("deploy.yaml routes %s to the cloud but names no cloud endpoint; the "
                        "edge serves them (give --cloud URL, or cloud.url in deploy.yaml)",
                        ", ".join(cloud_tasks))
            return EdgeOnlyRouter()
        section = {}
    section = dict(section)
    if "cloud" not in section and deploy is not None and deploy.cloud is not None:
        section["cloud"] = deploy.cloud.model_dump()
    if "mode" not in section and cloud_tasks and section.get("cloud"):
        section["mode"] = "by_task"  # a hybrid deploy.yaml given a cloud: its routes hold
    return EdgeCloudRouter(policy_from(section), deploy)


class EdgeCloudRouter:
    # Longer chat prompts than the engine's window are still served: the context builder cuts
    # them to the budget for the edge, and the cloud gets them whole.
    max_prompt_tokens: int | None = 1 << 20

    def __init__(self, policy: RoutePolicy, deploy: DeployConfig | None = None,
                 cloud: CloudClient | None = None) -> None:
        self.policy = policy
        self.deploy = deploy
        self.cloud = cloud or (CloudClient.from_policy(policy.cloud) if policy.cloud else None)
        self.probe: NetworkProbe | None = None
        if self.cloud is not None:
            net = policy.network
            self.probe = NetworkProbe(net.probe_url or f"{self.cloud.base}/models",
                                      net.probe_timeout_s, net.probe_interval_s,
                                      self.cloud.headers())
        self.device = DeviceSignals(policy.signals_file)
        self.latches = Latches()
        self.context = ContextFitter(policy.context_budget_share)
        self.classifier = _load_classifier(policy.task_classifier)

        self.tiers = TeamCascade(self)  # a team deploy's cascades over its members

    # -- the Router protocol ---------------------------------------------------------------
    async def route(self, request: RouteRequest, edge) -> Routed:
        self.context.bind(edge.metrics.registry)
        body, extra = _split_extension(request.body)
        edge_body, ctx = await self.context.fit(request.kind, body, extra, edge)
        task = request.task if request.task is not None else self.task_of(request)
        plan = await self._plan(request, task, ctx.input_share if ctx else None)
        if request.paths is not None:  # serve's rule (edge-only task, offline, forced): obeyed
            plan.paths = [p for p in plan.paths if p in request.paths]
            if self.deploy is not None and task in self.deploy.edge_only_tasks:
                plan.reason, plan.first_is_fallback = f"edge_only:{task}", False
        if ctx and ctx.overflow:  # the edge cannot take it at all
            plan.paths = [p for p in plan.paths if p != "edge"]
            if not plan.paths or self.cloud is None:
                raise BadRequest(ctx.overflow)
        steps = self.tiers.steps(request, task, edge, plan)
        routed = await (self.tiers.run(request, body, edge_body, steps, plan) if steps
                        else self._run(plan, request, body, edge_body, edge))
        if ctx and ctx.header and routed.route in ("edge", "edge-fallback"):
            routed.response.headers["x-edgepick-context"] = ctx.header
        return routed

    async def aclose(self) -> None:
        if self.probe is not None:
            await self.probe.aclose()
        if self.cloud is not None:
            await self.cloud.aclose()
        self.context.close()

    # -- deciding ----------------------------------------------------------------------------
    def task_of(self, request: RouteRequest) -> str | None:
        """The request's task type: the policy's task header, `metadata.task`, the user's
        classifier, or the policy's default (serve asks this to keep edge-only tasks home)."""
        task = declared_task(request, self.policy.task_header)
        if not task and self.classifier is not None:
            task = self.classifier(request.body)
        return task or self.policy.default_task

    async def _online(self) -> tuple[bool, str]:
        if self.probe is None:
            return False, "no_cloud"
        net = await self.probe.current()
        if not net.reachable:
            return False, "cloud_slow" if net.why == "slow" or "timed out" in net.why \
                else "cloud_unreachable"
        n = self.policy.network
        slow = Rule(on=n.max_latency_ms, off=n.clear_latency_ms or 0.75 * n.max_latency_ms)
        if self.latches.update("latency", slow, net.latency_ms):
            return False, "cloud_slow"
        return True, ""

    def _device_score(self, task: str | None, input_share: float | None) -> tuple[float, list[str]]:
        sig, st = self.policy.signals, self.device.read()
        gauge = self.context.m.get("signals")
        for name in ("battery_percent", "temperature_c", "memory_pressure"):
            value = getattr(st, name)
            if gauge is not None and value is not None:
                gauge.labels(name).set(value)
        active: list[str] = []
        score = 0.0
        on_battery = st.on_ac is not True
        for name, rule, value in (
                ("battery_low", sig.battery, st.battery_percent if on_battery else None),
                ("hot", sig.temperature, st.temperature_c),
                ("memory_pressure", sig.memory_pressure, st.memory_pressure),
                ("long_input", sig.input_share, input_share)):
            if rule is not None and self.latches.update(name, rule, value):
                score += rule.weight
                active.append(name)
        if task and task in sig.cloud_tasks and sig.weak_task:
            score += sig.weak_task
            active.append(f"weak_task:{task}")
        return score, active

    async def _plan(self, request: RouteRequest, task: str | None,
                    input_share: float | None) -> Plan:
        pol = self.policy
        mock = set(request.failing)
        if request.headers.get(FORCE_HEADER) and request.paths is not None:
            return Plan(list(request.paths), "forced", task=task, mock=mock)
        online, why_off = await self._online()
        if pol.mode == "cloud_first":
            if online:
                return Plan(["cloud", "edge"], "cloud_first", task=task, mock=mock)
            return Plan(["edge", "cloud"], why_off, True, task, mock)
        if pol.mode == "by_task":
            route = self.deploy.first_route(task) if self.deploy else "edge"
            reason = f"task:{task or 'default'}"
            if route == "cloud" and online:
                return Plan(["cloud", "edge"], reason, task=task, mock=mock)
            if route == "cloud":
                return Plan(["edge", "cloud"], f"{reason};{why_off}", True, task, mock)
            return Plan(["edge", "cloud"], reason, task=task, mock=mock)
        if pol.mode == "edge_first":
            score, active = self._device_score(task, input_share)
            if active and score >= pol.cloud_at and online:
                return Plan(["cloud", "edge"], "policy:" + "+".join(active), task=task, mock=mock)
        return Plan(["edge", "cloud"], pol.mode, task=task, mock=mock)

    # -- running -----------------------------------------------------------------------------
    def _judging(self) -> bool:
        pol = self.policy
        if self.cloud is None:
            return False  # nothing to escalate to: never pay for log-probabilities
        return pol.mode == "cascade" or pol.escalate_low_confidence or pol.validator is not None

    async def _run(self, plan: Plan, request: RouteRequest, body: dict, edge_body: dict,
                   edge) -> Routed:
        failures: list[tuple[str, ServeError]] = []
        for i, path in enumerate(plan.paths):
            if path == "cloud" and self.cloud is None:
                continue
            label = route_label(path, i, plan)
            reason = plan.reason if i == 0 else why_failed(failures)
            try:
                if path == "cloud":
                    resp = await self._cloud(request, body, plan)
                    return Routed(resp, label, reason)
                resp, unsure = await self._edge(request, edge_body, edge, plan)
            except ServeError as exc:
                if isinstance(exc, BadRequest):
                    raise
                failures.append((path, exc))
                log.info("route %s failed: %s", path, exc)
                continue
            if unsure and "cloud" in plan.paths[i + 1:]:
                try:
                    cloud = await self._cloud(request, body, plan)
                    if "x-edgepick-confidence" in resp.headers:  # why it was escalated
                        cloud.headers["x-edgepick-confidence"] = resp.headers["x-edgepick-confidence"]
                    return Routed(cloud, "cloud-escalated", unsure)
                except ServeError as exc:
                    resp = await as_client_wants(resp, request)
                    return Routed(resp, label, f"{unsure};cloud_failed:{short_reason(exc)}")
            return Routed(await as_client_wants(resp, request), label, reason)
        raise all_failed(failures)

    async def _edge(self, request: RouteRequest, body: dict, edge,
                    plan: Plan) -> tuple[ServedResponse, str]:
        if not (self._judging() and self.buffers(request)):
            return await self.straight(request, body, edge), ""
        pol = self.policy
        judged = pol.mode == "cascade" or pol.escalate_low_confidence
        return await self.judged(request, body, edge,
                                 pol.confidence.threshold if judged else None)

    def buffers(self, request: RouteRequest) -> bool:
        """Is the edge answer judged before it goes out (a stream under `decide_first`: no)?"""
        return not (request.stream and self.policy.stream_cascade == "decide_first")

    async def straight(self, request: RouteRequest, body: dict, edge) -> ServedResponse:
        """The edge's answer as the client asked for it, unjudged (a stream peeked)."""
        resp = await edge.forward(request.kind, body, request.stream, request.deadline)
        return await _peeked(resp) if request.stream else resp

    async def judged(self, request: RouteRequest, body: dict, edge,
                     threshold: float | None) -> tuple[ServedResponse, str]:
        """The edge's whole answer and why it should be handed on ("": kept): the validator
        failed, or its confidence is below `threshold` (None: confidence not judged)."""
        asked_body, asked = ask_logprobs(request.kind, body)
        resp = await edge.forward(request.kind, asked_body, False, request.deadline)
        data = resp.body or {}
        pol = self.policy
        why: list[str] = []
        if pol.validator is not None:
            ok, detail = pol.validator.check(answer_text(request.kind, data))
            if not ok:
                why.append("format_invalid")
        if threshold is not None:
            c = pol.confidence
            conf = confidence(answer_logprobs(data), c.method, c.k)
            if conf is None or conf < threshold:
                why.append("low_confidence")
            resp.headers["x-edgepick-confidence"] = "none" if conf is None else f"{conf:.4f}"
            self.context.observe_confidence(conf)
        if not asked:
            strip_logprobs(data)
        return resp, "+".join(why)

    async def _cloud(self, request: RouteRequest, body: dict, plan: Plan) -> ServedResponse:
        assert self.cloud is not None and self.probe is not None
        if "cloud" in plan.mock:
            raise CloudError("mock", "cloud: mock failure (x-edgepick-mock-failure)")
        try:
            resp = await self.cloud.forward(request.kind, body, request.stream, request.deadline)
        except CloudError as exc:
            if exc.why in ("unreachable", "slow"):
                self.probe.observe(False, why=exc.why)
            raise
        self.probe.observe(True, self.probe.state.latency_ms)
        return resp


def _is_error_event(piece: bytes) -> bool:
    """Does this piece of a stream open with an error event (the engine's or edgepick's)?"""
    ev = next(lsc.iter_sse_events([piece]), b"")
    obj = lsc.event_json(ev)
    return isinstance(obj, dict) and "error" in obj


async def _peeked(resp: ServedResponse) -> ServedResponse:
    """Read a stream's first event before committing: an engine lost before its first token
    becomes an error the router can still route around."""
    assert resp.chunks is not None
    try:
        first = await anext(resp.chunks)
    except StopAsyncIteration:
        first = b""
    if _is_error_event(first):
        await resp.aclose()
        raise EngineUnavailable("engine lost before its first token", retry_after=2)
    rest = resp.chunks

    async def chained() -> AsyncIterator[bytes]:
        if first:
            yield first
        async for c in rest:
            yield c

    gen = chained()

    async def close() -> None:
        await gen.aclose()
        await resp.aclose()

    return ServedResponse(chunks=gen, headers=resp.headers, queue_wait_s=resp.queue_wait_s,
                          _closer=close)


def _split_extension(body: dict) -> tuple[dict, dict]:
    """The request without edgepick's own field (`edgepick_context`: snippets, summary)."""
    if "edgepick_context" not in body:
        return body, {}
    extra = body["edgepick_context"]
    rest = {k: v for k, v in body.items() if k != "edgepick_context"}
    return rest, extra if isinstance(extra, dict) else {}


def _load_classifier(spec: str | None) -> Callable[[dict], str | None] | None:
    """A user's task classifier, `module:function`, called with the request body."""
    if not spec:
        return None

    mod, _, fn = spec.partition(":")
    try:
        return getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError, ValueError) as exc:
        raise EdgepickError(f"route.task_classifier '{spec}': cannot load it ({exc})") from None

