"""The route policy file: defaults, one-line errors, hysteresis of device signals."""

from __future__ import annotations

import pytest

from edgepick.errors import InputError
from edgepick.route.route_policy import Latches, Rule, load_policy
from edgepick.route.probes import DeviceSignals


def test_policy_sections_and_defaults(tmp_path):
    p = tmp_path / "policy.yaml"
    p.write_text("swap:\n  rules: []\nroute:\n  mode: cascade\n  cloud:\n    url: http://127.0.0.1:9/v1\n"
                 "  confidence: {method: min, threshold: 0.3}\n")
    pol = load_policy(p)
    assert pol.mode == "cascade" and pol.confidence.method == "min"
    assert pol.cloud.api_key_env == "EDGEPICK_CLOUD_API_KEY"
    assert pol.context_budget_share == 0.7 and pol.stream_cascade == "buffer"
    empty = tmp_path / "empty.yaml"
    empty.write_text("swap: {}\n")
    assert load_policy(empty).mode == "edge_first"


@pytest.mark.parametrize("text, where", [
    ("route:\n  mode: sideways\n", "route.mode"),
    ("route:\n  mode: cloud_first\n", "route"),
    ("route:\n  confidence: {threshold: 2}\n", "route.confidence.threshold"),
    ("route:\n  signals: {battery: {on: 20, off: 10, below: true}}\n", "route.signals.battery"),
    ("route:\n  colud: {url: x}\n", "route.colud"),
])
def test_bad_policy_is_one_line_naming_the_field(tmp_path, text, where):
    p = tmp_path / "policy.yaml"
    p.write_text(text)
    with pytest.raises(InputError) as exc:
        load_policy(p)
    msg = str(exc.value)
    assert str(p) in msg and where in msg and "\n" not in msg


def test_hysteresis_keeps_a_signal_on_inside_its_band():
    battery = Rule(on=20, off=25, below=True)
    latch = Latches()
    seq = [30, 21, 20, 22, 24, 25, 26, 21, 19]
    got = [latch.update("battery", battery, v) for v in seq]
    assert got == [False, False, True, True, True, True, False, False, True]
    hot = Rule(on=75, off=70)
    assert [latch.update("t", hot, v) for v in (74, 75, 71, 70, 69.9, 74)] == \
        [False, True, True, True, False, False]
    assert latch.update("t", hot, None) is False  # an unreadable sensor never sends to the cloud


def test_device_signals_come_from_the_serve_signals_file(tmp_path):
    f = tmp_path / "signals.json"
    f.write_text('{"battery_percent": 12, "on_ac": false, "temperature_c": 80}')
    sig = DeviceSignals(str(f), interval_s=0)
    st = sig.read()
    assert st.battery_percent == 12 and st.on_ac is False and st.temperature_c == 80
    f.write_text('{"battery_percent": 90}')
    assert sig.read().battery_percent == 90  # re-read: the state changes under a running server
    f.write_text('{"batery": 12}')
    with pytest.raises(InputError, match="batery"):
        sig.read()


def _router(section: dict, deploy=None):
    from edgepick.route.router import from_section

    return from_section(section, deploy)


def _req(headers=None, body=None):
    import time

    from edgepick.serve.router_api import RouteRequest

    return RouteRequest("chat", body or {"messages": [{"role": "user", "content": "hi"}]}, False,
                        time.monotonic() + 30, headers or {})


def _deploy(tmp_path):
    from edgepick.records.deploy import DeployConfig

    return DeployConfig.model_validate({
        "model": {"name": "m", "path": str(tmp_path / "m.gguf"), "sha256": "0" * 64},
        "routes": [{"task": "extraction", "route": "cloud"}, {"task": "classification"}],
        "cloud": {"url": "http://127.0.0.1:9/v1", "model": "big"}})


def test_by_task_routes_from_deploy_and_degrades_offline(tmp_path):
    import asyncio

    r = _router({"mode": "by_task"}, _deploy(tmp_path))
    assert r.cloud is not None and r.cloud.model == "big"  # deploy.yaml's cloud
    r.probe.observe(True, 5.0)  # the network is up
    plan = asyncio.run(r._plan(_req({"x-edgepick-task": "extraction"}), "extraction", None))
    assert plan.paths == ["cloud", "edge"] and plan.reason == "task:extraction"
    plan = asyncio.run(r._plan(_req(), "classification", None))
    assert plan.paths == ["edge", "cloud"] and plan.reason == "task:classification"
    r.probe.observe(False, why="unreachable")  # offline: the cloud task runs on the edge
    plan = asyncio.run(r._plan(_req(), "extraction", None))
    assert plan.paths[0] == "edge" and plan.first_is_fallback
    assert plan.reason == "task:extraction;cloud_unreachable"
    body = {"messages": [], "metadata": {"task": "extraction"}}
    assert r.task_of(_req(body=body)) == "extraction"
    asyncio.run(r.aclose())


def test_edge_first_policy_score_with_input_length_and_a_named_classifier(tmp_path):
    import asyncio

    from edgepick.errors import EdgepickError

    calm = tmp_path / "signals.yaml"  # not this busy machine's own memory pressure
    calm.write_text("battery_percent: 80\non_ac: true\ntemperature_c: 40\nmemory_pressure: 0\n")
    r = _router({"mode": "edge_first", "cloud": {"url": "http://127.0.0.1:9/v1"},
                 "task_classifier": "json:dumps", "signals_file": str(calm)})
    r.probe.observe(True, 5.0)
    assert r.task_of(_req(body={"a": 1})) == '{"a": 1}'  # whatever the user's function says
    plan = asyncio.run(r._plan(_req(), None, 0.9))  # 90% of the window: long input
    assert plan.paths == ["cloud", "edge"] and plan.reason == "policy:long_input"
    plan = asyncio.run(r._plan(_req(), None, 0.2))
    assert plan.paths == ["edge", "cloud"] and plan.reason == "edge_first"
    asyncio.run(r.aclose())
    with pytest.raises(EdgepickError, match="task_classifier 'nosuch.mod:f'"):
        _router({"task_classifier": "nosuch.mod:f"})
