"""A live server on a registry: activate and rollback switch it once the new engine is healthy,
a checksum mismatch is refused while the active version keeps serving, and a policy swaps
versions when the signals file says the battery is low (with hysteresis)."""

from __future__ import annotations

import json

import httpx
import yaml

from serve_harness import serve, wait_until


def _version(s) -> str:
    return httpx.get(s.url + "/health", timeout=10).json().get("version", "")


def _ask(s) -> str:
    raw = s.openai("x") \
        .chat.completions.with_raw_response.create(
            model="x", max_tokens=4, messages=[{"role": "user", "content": "Hi"}])
    return raw.headers["x-edgepick-model-version"]


def _registry(tmp_path, first: str, second: str):
    from edgepick.registry.store import Registry

    root = tmp_path / "registry"
    reg = Registry(root, create=True)  # the CLI's add/activate are tested in test_registry_cli
    reg.add(first, "smol", "q8")
    reg.add(second, "smol", "q4")
    reg.commit("smol", "q8")
    return root


def test_live_activate_rollback_and_checksum_refusal(cli, tiny_model, smollm2_q4_1, tmp_path):
    from serve_harness import need_llama_server

    need_llama_server()
    reg = _registry(tmp_path, tiny_model, smollm2_q4_1)
    with serve(["--registry", str(reg), "--slots", "1", "--ctx", "512"], tmp_path) as s:
        assert _version(s) == "q8" and _ask(s) == "smol@q8"
        out = cli("models", "activate", "smol@q4", "--registry", str(reg), "--server", s.url)
        assert out.returncode == 0, out.stderr
        assert _version(s) == "q4" and _ask(s) == "smol@q4"
        assert s.metric("edgepick_model_swaps_total", cause="activate") == 1
        assert s.metric("edgepick_active_model", name="smol", version="q4") == 1
        state = json.loads((reg / "registry.json").read_text())["models"]["smol"]
        assert state["active"] == "q4"

        out = cli("models", "rollback", "smol", "--registry", str(reg), "--server", s.url)
        assert out.returncode == 0, out.stderr
        assert _version(s) == "q8" and _ask(s) == "smol@q8"

        q4 = reg / state["versions"]["q4"]["file"]
        with open(q4, "r+b") as fh:  # corrupt the stored file
            fh.seek(100)
            fh.write(b"\0" * 16)
        out = cli("models", "activate", "smol@q4", "--registry", str(reg), "--server", s.url)
        assert out.returncode == 2 and "SHA-256" in out.stderr
        assert _version(s) == "q8" and _ask(s) == "smol@q8"  # the active keeps serving
        assert json.loads((reg / "registry.json").read_text())["models"]["smol"]["active"] == "q8"


def test_swap_by_signals_file(cli, tiny_model, tmp_path):
    from serve_harness import need_llama_server

    need_llama_server()
    reg = _registry(tmp_path, tiny_model, tiny_model)
    signals = tmp_path / "signals.yaml"
    signals.write_text("battery_percent: 80\non_ac: false\n")
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({
        "swap": {"check_every_s": 0.1, "min_dwell_s": 0, "signals_file": str(signals),
                 "rules": [{"name": "low-battery", "when": {"battery_below": 20},
                            "use": "q4", "hysteresis": {"battery": 5}}]},
        "notes": "a section serve does not own is ignored",
    }))
    with serve(["--registry", str(reg), "--slots", "1", "--ctx", "512", "--policy", str(policy)],
               tmp_path) as s:
        assert _version(s) == "q8"
        signals.write_text("battery_percent: 15\non_ac: false\n")
        wait_until("the swap to q4", lambda: _version(s) == "q4", 60)
        assert _ask(s) == "smol@q4"
        assert s.metric("edgepick_model_swaps_total", cause="policy:low-battery") == 1
        signals.write_text("battery_percent: 22\non_ac: false\n")  # inside the hysteresis band
        # a check happens every 0.1 s: wait for several to be sure none swaps back
        n = s.metric("edgepick_policy_checks_total")
        wait_until("ten more checks", lambda: s.metric("edgepick_policy_checks_total") >= n + 10)
        assert _version(s) == "q4"
        signals.write_text("battery_percent: 40\non_ac: true\n")
        wait_until("the swap back", lambda: _version(s) == "q8", 60)
        assert s.metric("edgepick_model_swaps_total", cause="policy:default") == 1
        assert "hot swap" in s.log.read_text()
