"""The route policy file: defaults, one-line errors, hysteresis of device signals."""

from __future__ import annotations

import pytest

from edgepick.errors import InputError
from edgepick.route.policy import Latches, Rule, load_policy
from edgepick.route.signals import DeviceSignals


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
