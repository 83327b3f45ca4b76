"""Pieces of serve that need no engine: settings precedence, policy validation and hysteresis,
signals from a file, admission bounds, request checks, the monitor's quantiles and verdicts."""

from __future__ import annotations

import asyncio
import time

import pytest

from edgepick.errors import EdgepickError, InputError
from edgepick.monitor.live import figures, parse, quantile
from edgepick.records.deploy import Baseline
from edgepick.serve.pool.admission import Admission, ResourceCheck, ResourcePolicy
from edgepick.serve.pool.forwarded import wire
from edgepick.serve.http.request_checks import check_body
from edgepick.serve.pool.policy_file import ServePolicy
from edgepick.serve.router_api import BadRequest, DeadlineExceeded, Overloaded, ResourceRefused
from edgepick.serve.settings import ServeSettings
from edgepick.serve.pool.signals import Signals, read_file


def test_settings_flags_over_env_over_file(tmp_path, monkeypatch):
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("slots: 4\nqueue: 9\nmem-limit: 1GiB\n")
    monkeypatch.setenv("EDGEPICK_SERVE_QUEUE", "5")
    monkeypatch.setenv("EDGEPICK_API_KEY", "k")
    s = ServeSettings.load(cfg, slots=3)
    assert (s.slots, s.queue, s.mem_limit, s.api_key, s.host) == (3, 5, 2**30, "k", "127.0.0.1")
    cfg.write_text("slotz: 4\n")
    with pytest.raises(InputError, match="unknown setting"):
        ServeSettings.load(cfg)
    with pytest.raises(EdgepickError, match="slots"):
        ServeSettings.load(None, slots=0)


def _policy(tmp_path, text: str) -> ServePolicy:
    p = tmp_path / "policy.yaml"
    p.write_text(text)
    return ServePolicy.load(p)


def test_policy_hysteresis_and_strict_sections(tmp_path):
    pol = _policy(tmp_path, """
swap:
  rules:
    - {name: hot, when: {temperature_above: 75}, use: small@1}
    - {name: low, when: {battery_below: 20, on_ac: false}, use: q4, hysteresis: {battery: 5}}
route: {router: whatever, anything: [1, 2]}
other: ignored
""").swap
    low = pol.rules[1]
    assert pol.choose(Signals(battery_percent=50, on_ac=False), None) is None
    assert pol.choose(Signals(battery_percent=15, on_ac=False), None) is low
    assert pol.choose(Signals(battery_percent=22, on_ac=False), low) is low  # inside the band
    assert pol.choose(Signals(battery_percent=22, on_ac=False), None) is None
    assert pol.choose(Signals(battery_percent=26, on_ac=False), low) is None
    assert pol.choose(Signals(battery_percent=15, on_ac=True), low) is None
    assert pol.choose(Signals(temperature_c=80, battery_percent=10, on_ac=False), low).name == "hot"
    assert pol.choose(Signals(), None) is None  # missing signals never hold
    with pytest.raises(InputError, match="field 'swap.rules.0.when.battery_blow'"):
        _policy(tmp_path, "swap:\n  rules:\n    - {when: {battery_blow: 2}, use: q4}\n")
    with pytest.raises(InputError, match="resources.action"):
        _policy(tmp_path, "resources: {action: explode}\n")


def test_signals_file(tmp_path):
    f = tmp_path / "s.json"
    f.write_text('{"battery_percent": 12, "on_ac": false, "temperature_c": 61.5}')
    assert read_file(f).battery_percent == 12
    f.write_text("battery: 12\n")
    with pytest.raises(InputError, match="battery"):
        read_file(f)


def test_admission_bounds_and_deadline():
    async def go() -> None:
        adm = Admission(slots=1, queue=1)
        adm.enter()
        await adm.acquire(time.monotonic() + 5)
        adm.enter()  # the queue place
        with pytest.raises(Overloaded) as exc:
            adm.enter()
        assert exc.value.retry_after >= 1
        with pytest.raises(DeadlineExceeded):
            await adm.acquire(time.monotonic() + 0.05)
        assert adm.admitted == 1 and adm.busy == 1
        adm.release(0.1)
        assert adm.admitted == 0 and adm.waiting == 0

    asyncio.run(go())


def test_resource_check_refuses_or_degrades():
    huge = 1e12  # MiB: no machine has that free
    with pytest.raises(ResourceRefused, match="available memory"):
        ResourceCheck(ResourcePolicy(min_available_mb=huge)).apply({"max_tokens": 500})
    body, why = ResourceCheck(ResourcePolicy(min_available_mb=huge, action="degrade",
                                             degrade_max_tokens=8)).apply({"max_tokens": 500})
    assert body["max_tokens"] == 8 and "available memory" in why
    assert ResourceCheck(ResourcePolicy()).apply({"x": 1}) == ({"x": 1}, None)


def test_request_checks():
    async def count(text: str) -> int:
        return len(text.split())

    async def go() -> None:
        chat = {"messages": [{"role": "user", "content": "hi there"}], "model": "/a/b.gguf"}
        out = await check_body("chat", dict(chat), max_tokens=32, max_prompt_tokens=5,
                               count_tokens=count)
        sent = wire(out)  # the typed request, as the engine receives it
        assert sent["max_tokens"] == 32 and "model" not in sent
        with pytest.raises(BadRequest, match="limit of 32 tokens"):
            await check_body("chat", dict(chat, max_tokens=33), max_tokens=32,
                             max_prompt_tokens=5, count_tokens=count)
        with pytest.raises(BadRequest, match="limit of 5 prompt tokens"):
            await check_body("completion", {"prompt": "a b c d e f g"}, max_tokens=32,
                             max_prompt_tokens=5, count_tokens=count)
        with pytest.raises(BadRequest, match="'messages'"):
            await check_body("chat", {"messages": []}, max_tokens=32, max_prompt_tokens=5,
                             count_tokens=count)

    asyncio.run(go())


METRICS = """
edgepick_ttft_seconds_bucket{route="edge",le="0.1"} 50.0
edgepick_ttft_seconds_bucket{route="edge",le="0.2"} 90.0
edgepick_ttft_seconds_bucket{route="edge",le="+Inf"} 100.0
edgepick_requests_total{endpoint="/v1/chat/completions",status="200"} 90.0
edgepick_requests_total{endpoint="/v1/chat/completions",status="503"} 10.0
edgepick_sampled_outputs_total{verdict="ok"} 40.0
edgepick_sampled_outputs_total{verdict="unacceptable"} 10.0
"""


def test_monitor_quantiles_and_verdicts():
    s = parse(METRICS)
    assert quantile(0.5, s.buckets("edgepick_ttft_seconds")) == pytest.approx(0.1)
    assert quantile(0.7, s.buckets("edgepick_ttft_seconds")) == pytest.approx(0.15)
    rows = {r.figure: r for r in figures(s, Baseline(ttft_p50_ms=50, unacceptable_rate=0.05))}
    assert rows["TTFT P50"].verdict == "worse"
    assert rows["error rate (5xx)"].live == pytest.approx(0.1)
    unacc = rows["unacceptable (sampled)"]
    assert unacc.live == pytest.approx(0.2) and unacc.low > 0.05 and unacc.verdict == "worse"


def test_a_hybrid_deploy_routes_by_task_and_says_when_it_has_no_cloud(caplog):
    """The decision's per-task routes hold in serve without a policy file; a hybrid decided
    against a local reference has no cloud to send to, and serve says so at start."""
    from edgepick.records.deploy import CloudEndpoint, DeployConfig, DeployModel, TaskRoute
    from edgepick.serve.assemble import load_router
    from edgepick.serve.pool.policy_file import ServePolicy
    from edgepick.serve.router_api import EdgeOnlyRouter

    deploy = DeployConfig(status="hybrid", model=DeployModel(name="m", path="/m.gguf", sha256="0"),
                          routes=[TaskRoute(task="summary", route="edge"),
                                  TaskRoute(task="math", route="cloud")])
    with caplog.at_level("WARNING", logger="edgepick.serve"):
        assert isinstance(load_router(ServePolicy(), deploy), EdgeOnlyRouter)
    assert "math" in caplog.text and "no cloud endpoint" in caplog.text
    with_cloud = deploy.model_copy(update={"cloud": CloudEndpoint(url="http://127.0.0.1:9/v1")})
    router = load_router(ServePolicy(), with_cloud)
    assert router.policy.mode == "by_task" and router.deploy.route_for("math") == "cloud"
    assert isinstance(load_router(ServePolicy(), deploy.model_copy(update={"routes": []})),
                      EdgeOnlyRouter)


def test_the_typed_request_reaches_the_engine_as_the_client_sent_it():
    """The checked model is what the pool forwards; written once for the engine, it carries
    what the client set (llama-server's own fields and unknown ones too), nulls dropped, the
    served model's name, and a stream with its usage when serve reads it as one."""
    from edgepick.serve.pool.forwarded import engine_payload
    from edgepick.serve.request_models import ChatCompletionRequest

    request = ChatCompletionRequest.model_validate({
        "messages": [{"role": "user", "content": "x", "name": None},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"function": {"name": "f", "arguments": "{}"}}]}],
        "temperature": 0, "top_k": 3, "mirostat": 2, "n_probs": None, "stop": None,
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"type": "string", "default": None}}}})
    assert engine_payload(request, "served", False) == {
        "model": "served", "temperature": 0.0, "top_k": 3, "mirostat": 2,
        "messages": [{"role": "user", "content": "x"},
                     {"role": "assistant", "tool_calls": [
                         {"type": "function", "function": {"name": "f", "arguments": "{}"}}]}],
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"type": "string", "default": None}}}}
    streamed = engine_payload(request, "served", True)
    assert streamed["stream"] is True and streamed["stream_options"] == {"include_usage": True}


def test_a_body_replaced_before_routing_is_what_the_edge_forwards():
    """A hook that replaces the router's view of the body (deploy.yaml's constraint per task)
    is not lost: the edge then gets that body, which the pool checks into the model again."""
    from edgepick.serve.router_api import RouteRequest
    from edgepick.serve.request_models import ChatCompletionRequest

    body = {"messages": [{"role": "user", "content": "x"}]}
    typed = ChatCompletionRequest.model_validate(body)
    rr = RouteRequest("chat", body, False, 0.0, request=typed)
    assert rr.typed() is typed
    rr.body = {**rr.body, "grammar": 'root ::= "a"'}
    assert rr.typed() is rr.body and rr.request is None
