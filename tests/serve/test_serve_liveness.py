"""Liveness (issue 25 item 9): a frozen engine reads not ready within the probe bound and ready
again once it answers; one silent past the longer bound is restarted (reason "hung"); a memory
limit below the engine's own footprint is refused at start, and restarts that do not help stop
after the budget, reported as degraded."""

from __future__ import annotations

import os
import signal
import time

import httpx
import pytest

from serve_harness import hog_engine, serve, wait_until

PROBE_S = 1.0  # --probe-timeout / EDGEPICK_SERVE_PROBE_TIMEOUT in these tests


def test_frozen_engine_reads_not_ready_within_the_bound(tiny_model, tmp_path):
    # the bounds as flags here (the environment in the next tests): both reach the settings
    with serve(["-m", tiny_model, "--slots", "1", "--ctx", "512", "--probe-timeout", str(PROBE_S),
                "--hung-after", "600", "--max-restarts", "2", "--restart-window", "60"],
               tmp_path) as s:
        (pid,) = s.engine_pids()
        assert s.metric("edgepick_ready") == 1
        os.kill(pid, signal.SIGSTOP)
        try:
            stopped = time.monotonic()
            # bound: one probe interval plus the probe timeout, with room for a loaded host
            wait_until("not ready", lambda: not s.healthy() and s.metric("edgepick_ready") == 0,
                       timeout=2 * PROBE_S + 1 + 10)
            assert time.monotonic() - stopped < 2 * PROBE_S + 11
            h = httpx.get(s.url + "/health/ready", timeout=5)
            assert h.status_code == 503 and h.json()["status"] == "unresponsive"
            h = httpx.get(s.url + "/health", timeout=5)  # the plain probe tells the same truth
            assert h.status_code == 503 and h.json() == {"status": "unresponsive"}
            assert httpx.get(s.url + "/health/live", timeout=5).status_code == 200
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_until("ready again", lambda: s.healthy() and s.metric("edgepick_ready") == 1, 30)
        assert s.engine_pids() == [pid]  # the same engine: not restarted
        assert s.metric("edgepick_engine_restarts_total") == 0


def test_engine_silent_past_the_longer_bound_is_restarted_as_hung(tiny_model, tmp_path):
    env = {"EDGEPICK_SERVE_PROBE_TIMEOUT": str(PROBE_S), "EDGEPICK_SERVE_HUNG_AFTER": "4"}
    with serve(["-m", tiny_model, "--slots", "1", "--ctx", "512"], tmp_path, env=env) as s:
        (pid,) = s.engine_pids()
        os.kill(pid, signal.SIGSTOP)
        try:
            wait_until("restart counted", lambda: s.metric("edgepick_engine_restarts_total",
                                                           reason="hung") == 1, 60)
        finally:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        wait_until("ready again", lambda: s.healthy(), 60)
        assert s.engine_pids() != [pid]
        r = httpx.post(s.v1 + "/completions", timeout=60,
                       json={"model": "x", "prompt": "Hi", "max_tokens": 2})
        assert r.status_code == 200


def test_memory_limit_below_the_engine_footprint_is_refused_at_start(tiny_model, tmp_path):
    from serve_spawn import spawn_serve
    from edgepick.errors import EdgepickError

    log = tmp_path / "serve.log"
    with pytest.raises(EdgepickError) as exc:
        with spawn_serve(["--log-dir", str(tmp_path), "-m", tiny_model, "--slots", "1",
                          "--ctx", "512", "--mem-limit", "1MiB"], log, timeout_s=120):
            pass
    assert "below the engine's own footprint" in str(exc.value)
    assert "engine restart" not in log.read_text()


def test_restarts_that_do_not_help_stop_after_the_budget(tiny_model, tmp_path):
    env, gate = hog_engine(tmp_path, 256)
    env.update(EDGEPICK_SERVE_MAX_RESTARTS="2", EDGEPICK_SERVE_RESTART_WINDOW="600")
    with serve(["-m", tiny_model, "--slots", "1", "--ctx", "512", "--mem-limit", "128MiB",
                "--mem-check", "0.2", "--restart-cooldown", "0"], tmp_path, env=env) as s:
        gate.touch()  # every engine from now on leaks at once
        wait_until("failed", lambda: httpx.get(s.url + "/health/ready", timeout=5)
                   .json().get("status") == "failed", 120)
        assert s.metric("edgepick_engine_restarts_total", reason="memory") == 2
        # and no more: several watchdog periods later the count has not moved
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            assert s.metric("edgepick_engine_restarts_total", reason="memory") == 2
        assert "no more restarts" in httpx.get(s.url + "/health/ready", timeout=5).json()["detail"]
        # the watchdog wins: the engine over its limit is stopped even with no restart left,
        # and every request is told so at once (issue 35)
        assert s.engine_pids() == []
        t0 = time.monotonic()
        r = httpx.post(s.v1 + "/completions", timeout=60,
                       json={"model": "x", "prompt": "Hi", "max_tokens": 2})
        assert r.status_code == 503 and r.headers["retry-after"] and time.monotonic() - t0 < 1


def test_liveness_flags_are_validated(cli):
    for flag, value in (("--probe-timeout", "0"), ("--hung-after", "-1"),
                        ("--max-restarts", "0"), ("--restart-window", "0")):
        out = cli("serve", "-m", "unused.gguf", flag, value, timeout=60)
        assert out.returncode == 2, (flag, out.stderr)
        assert flag[2:].replace("-", "_") in out.stderr and "Traceback" not in out.stderr
