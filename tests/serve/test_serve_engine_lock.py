"""The engine child is locked (issue 25 item 6): a request to it without edgepick's credential is
refused, the endpoints that show other requests are off, and it inherits no descriptor of
edgepick's — its listening socket included."""

from __future__ import annotations

import os

import httpx

from serve_harness import serve


def _socket_inodes(pid: int) -> set[str]:
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:"):
            out.add(target)
    return out


def _engine_key(pid: int) -> str:
    # the test runs as the same user as serve, so it may read the child's environment
    with open(f"/proc/{pid}/environ", "rb") as fh:
        env = dict(item.split(b"=", 1) for item in fh.read().split(b"\0") if b"=" in item)
    return env[b"LLAMA_API_KEY"].decode()


def test_engine_refuses_requests_without_edgepick_credential(tiny_model, tmp_path):
    with serve(["-m", tiny_model, "--slots", "1", "--ctx", "512", "--api-key", "outer"],
               tmp_path) as s:
        (pid,) = s.engine_pids()
        (port,) = s.engine_ports()
        engine = f"http://127.0.0.1:{port}"
        body = {"model": "x", "prompt": "Hi", "max_tokens": 2}
        # around edgepick: no key, a wrong key, edgepick's own client key: all refused
        for headers in ({}, {"Authorization": "Bearer nope"},
                        {"Authorization": "Bearer outer"}):
            for method, path in (("POST", "/v1/completions"), ("GET", "/props"),
                                 ("GET", "/slots"), ("GET", "/metrics"), ("POST", "/tokenize")):
                r = httpx.request(method, engine + path, headers=headers, timeout=10,
                                  json=body if method == "POST" else None)
                assert r.status_code == 401, (headers, path, r.status_code, r.text[:200])
        assert httpx.get(engine + "/health", timeout=10).status_code == 200  # public, says nothing
        # with the engine's own key, the slots endpoint is still off: it would show others' prompts
        key = {"Authorization": f"Bearer {_engine_key(pid)}"}
        slots = httpx.get(engine + "/slots", headers=key, timeout=10)
        assert slots.status_code == 501, slots.text[:200]
        assert httpx.get(engine + "/props", headers=key, timeout=10).json()["endpoint_slots"] is False
        # the key is per start and never on the command line, which every local user can read
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            assert _engine_key(pid).encode() not in fh.read()
        # through edgepick, with edgepick's key, it answers
        r = httpx.post(s.v1 + "/completions", json=body, timeout=60,
                       headers={"Authorization": "Bearer outer"})
        assert r.status_code == 200 and r.json()["choices"]


def test_engine_inherits_no_descriptor_of_serve(tiny_model, tmp_path):
    with serve(["-m", tiny_model, "--slots", "1", "--ctx", "512"], tmp_path) as s:
        (pid,) = s.engine_pids()
        ours = _socket_inodes(s.proc.pid)  # serve's listening socket among them
        assert ours
        assert not ours & _socket_inodes(pid)
