"""The router inside `edgepick serve`, with failures injected on purpose (SPEC §11): a real edge
(llama-server on the tiny model) and a cloud that is a second llama-server or a small fake
OpenAI-compatible server that can answer 500, malformed JSON, slowly, or not at all."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from llama_server import free_port, llama_server
from serve_harness import serve, wait_until

MSG = [{"role": "user", "content": "Say hello."}]
CLOUD_TEXT = "Hello from the cloud."


class FakeCloud:
    """An OpenAI-compatible server on 127.0.0.1 whose behaviour the test sets per request."""

    def __init__(self) -> None:
        self.mode = "ok"  # ok | 500 | malformed | slow
        self.delay_s = 3.0
        self.calls = 0
        self.port = free_port()
        app = FastAPI()

        @app.get("/v1/models")
        async def models() -> dict:
            return {"object": "list", "data": [{"id": "cloud", "object": "model"}]}

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Response:
            body = await request.json()
            self.calls += 1
            if self.mode == "500":
                return JSONResponse({"error": {"message": "boom"}}, status_code=500)
            if self.mode == "malformed":
                return Response('{"choices": [', media_type="application/json")
            if self.mode == "slow":
                await asyncio.sleep(self.delay_s)
            if body.get("stream"):
                return StreamingResponse(self._sse(), media_type="text/event-stream")
            return JSONResponse({"id": "c1", "object": "chat.completion", "created": 0,
                                 "model": "cloud", "choices": [{
                                     "index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": CLOUD_TEXT}}]})

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="error"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    async def _sse(self):
        for piece in ("Hello ", "from the cloud."):
            chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "cloud",
                     "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            yield f"data: {json.dumps(chunk)}\n\n"
        yield "data: [DONE]\n\n"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeCloud":
        self.thread.start()
        wait_until("fake cloud up", lambda: self.server.started, 20)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@contextmanager
def fake_cloud():
    cloud = FakeCloud().start()
    try:
        yield cloud
    finally:
        cloud.stop()


def policy(tmp: Path, cloud_url: str, **route) -> Path:
    import yaml

    calm = tmp / "calm-signals.yaml"  # not this busy machine's own memory pressure
    calm.write_text("battery_percent: 80\non_ac: true\ntemperature_c: 40\nmemory_pressure: 0\n")
    section = {"mode": "edge_first", "allow_forced_route": True, "signals_file": str(calm),
               "escalate_low_confidence": False,
               "cloud": {"url": cloud_url, "first_chunk_timeout_s": 1.0, "timeout_s": 1.5},
               "network": {"probe_timeout_s": 0.5, "probe_interval_s": 0.3}}
    for k, v in route.items():
        section[k] = dict(section.get(k) or {}, **v) if isinstance(v, dict) else v
    path = tmp / "policy.yaml"
    path.write_text(yaml.safe_dump({"route": section}))
    return path


def ask(s, stream: bool = False, headers: dict | None = None, messages=MSG,
        max_tokens: int = 8) -> tuple[int, dict, str]:
    """(status, headers, answer text) of one chat request, streamed or not."""
    body = {"model": "x", "messages": messages, "max_tokens": max_tokens, "stream": stream}
    with httpx.Client(timeout=60) as c:
        if not stream:
            r = c.post(s.v1 + "/chat/completions", json=body, headers=headers or {})
            text = r.json()["choices"][0]["message"]["content"] if r.status_code == 200 else r.text
            return r.status_code, dict(r.headers), text
        with c.stream("POST", s.v1 + "/chat/completions", json=body, headers=headers or {}) as r:
            pieces = []
            for line in r.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    ev = json.loads(line[6:])
                    assert "error" not in ev, ev
                    for ch in ev.get("choices") or []:
                        pieces.append((ch.get("delta") or {}).get("content") or "")
            return r.status_code, dict(r.headers), "".join(pieces)


EDGE = ["--slots", "1", "--queue", "0", "--ctx", "512", "--threads", "1"]


def test_cloud_first_falls_back_to_the_edge_on_every_cloud_failure(tiny_model, tmp_path):
    with fake_cloud() as cloud, \
            serve(["-m", tiny_model, *EDGE, "--policy",
                   str(policy(tmp_path, cloud.url, mode="cloud_first"))], tmp_path) as s:
        st, h, text = ask(s)
        assert (st, h["x-edgepick-route"], text) == (200, "cloud", CLOUD_TEXT)
        st, h, text = ask(s, stream=True)
        assert (st, h["x-edgepick-route"], text) == (200, "cloud", CLOUD_TEXT)
        for mode, why in (("500", "cloud_http_500"), ("malformed", "cloud_malformed")):
            cloud.mode = mode
            for stream in (False, True):
                st, h, text = ask(s, stream=stream)
                assert st == 200 and h["x-edgepick-route"] == "edge-fallback", (mode, stream)
                assert h["x-edgepick-route-reason"] == why and text and text != CLOUD_TEXT
        cloud.mode = "slow"  # past the first-chunk and whole-answer timeouts
        for stream in (False, True):
            st, h, text = ask(s, stream=stream)
            assert st == 200 and h["x-edgepick-route"] == "edge-fallback" and text
            assert "slow" in h["x-edgepick-route-reason"]
        cloud.mode = "ok"
        wait_until("the cloud back in use", lambda: ask(s)[1]["x-edgepick-route"] == "cloud", 20)
        cloud.stop()  # down: refused connections
        for stream in (False, True):
            st, h, text = ask(s, stream=stream)
            assert st == 200 and h["x-edgepick-route"] == "edge-fallback" and text
            assert "unreachable" in h["x-edgepick-route-reason"]
        assert s.metric("edgepick_routes_total", route="edge-fallback") >= 8


def test_every_path_failing_names_each_path(tiny_model, tmp_path):
    with fake_cloud() as cloud, \
            serve(["-m", tiny_model, *EDGE, "--policy", str(policy(tmp_path, cloud.url))],
                  tmp_path) as s:
        cloud.mode = "500"
        st, h, text = ask(s, headers={"x-edgepick-mock-failure": "edge"})
        assert st == 429 and "retry-after" in h
        msg = json.loads(text)["error"]["message"]
        assert "edge:" in msg and "cloud:" in msg and "500" in msg
        cloud.mode = "ok"  # a forced path, for tests: each route on purpose
        assert ask(s, headers={"x-edgepick-force-route": "cloud"})[1]["x-edgepick-route"] == "cloud"
        st, h, _ = ask(s, headers={"x-edgepick-force-route": "edge",
                                   "x-edgepick-mock-failure": "edge"})
        assert st == 429  # forced to the edge: no other path allowed


def test_edge_overload_goes_to_the_cloud_and_cloud_death_leaves_the_edge(tiny_model, tmp_path):
    with llama_server(tiny_model, "cloud", tmp_path) as cloud_url:
        base = cloud_url.split("#")[0]
        pol = policy(tmp_path, base, cloud={"first_chunk_timeout_s": 20.0, "timeout_s": 60.0})
        with serve(["-m", tiny_model, *EDGE, "--max-tokens", "600", "--policy", str(pol)],
                   tmp_path) as s:
            client = openai.OpenAI(base_url=s.v1, api_key="x", max_retries=0, timeout=120)
            held = client.chat.completions.create(model="x", max_tokens=600, stream=True,
                                                  messages=MSG, extra_body={"ignore_eos": True})
            it = iter(held)
            next(it)  # the only edge slot is busy, and there is no queue
            raw = client.chat.completions.with_raw_response.create(
                model="x", max_tokens=8, messages=MSG)
            assert raw.headers["x-edgepick-route"] == "cloud-escalated"
            assert raw.headers["x-edgepick-route-reason"] == "edge_overloaded"
            assert raw.parse().choices[0].message.content
            held.close()
            assert s.metric("edgepick_routes_total", route="cloud-escalated") == 1
    # The cloud is gone now (its server stopped): edge_first answers everything from the edge.
    with serve(["-m", tiny_model, "--slots", "2", "--queue", "8", "--ctx", "512", "--threads",
                "1", "--policy", str(pol)], tmp_path) as s:
        import concurrent.futures as cf

        with cf.ThreadPoolExecutor(6) as pool:
            got = list(pool.map(lambda _: ask(s), range(6)))
        assert [g[0] for g in got] == [200] * 6
        assert {g[1]["x-edgepick-route"] for g in got} == {"edge"}


def test_cloud_killed_mid_run_in_edge_first_every_request_answered(tiny_model, tmp_path):
    with llama_server(tiny_model, "cloud", tmp_path) as cloud_url:
        pol = policy(tmp_path, cloud_url.split("#")[0])
        with serve(["-m", tiny_model, "--slots", "1", "--queue", "8", "--ctx", "512",
                    "--threads", "1", "--policy", str(pol)], tmp_path) as s:
            results = [ask(s, stream=i % 2 == 1) for i in range(3)]
            # kill the cloud between requests (its server is a child of this test)
            import psutil

            port = int(cloud_url.split(":")[2].split("/")[0])
            for p in psutil.process_iter(["cmdline"]):
                cmd = p.info["cmdline"] or []
                if "--port" in cmd and cmd[cmd.index("--port") + 1] == str(port):
                    p.send_signal(signal.SIGKILL)
            results += [ask(s, stream=i % 2 == 1) for i in range(5)]
    assert [r[0] for r in results] == [200] * 8
    assert {r[1]["x-edgepick-route"] for r in results} == {"edge"}
    assert all(r[2] for r in results)


def test_cascade_escalates_when_the_edge_is_unsure(tiny_model, tmp_path):
    with fake_cloud() as cloud:
        unsure = policy(tmp_path, cloud.url, mode="cascade", confidence={"threshold": 0.999})
        with serve(["-m", tiny_model, *EDGE, "--policy", str(unsure)], tmp_path) as s:
            for stream in (False, True):
                st, h, text = ask(s, stream=stream)
                assert (st, h["x-edgepick-route"], text) == (200, "cloud-escalated", CLOUD_TEXT)
                assert h["x-edgepick-route-reason"] == "low_confidence"
            cloud.mode = "500"  # escalation fails: the edge's own answer still goes out
            st, h, text = ask(s)
            assert st == 200 and h["x-edgepick-route"] == "edge" and text
            assert h["x-edgepick-route-reason"] == "low_confidence;cloud_failed:http_500"
        sure = policy(tmp_path, cloud.url, mode="cascade", confidence={"threshold": 0.0})
        cloud.mode = "ok"
        with serve(["-m", tiny_model, *EDGE, "--policy", str(sure)], tmp_path) as s:
            client = openai.OpenAI(base_url=s.v1, api_key="x", max_retries=0, timeout=60)
            raw = client.chat.completions.with_raw_response.create(model="x", max_tokens=8,
                                                                   messages=MSG)
            assert raw.headers["x-edgepick-route"] == "edge"
            assert 0 < float(raw.headers["x-edgepick-confidence"]) <= 1
            assert raw.parse().choices[0].logprobs is None  # not asked for: not shown
            # a buffered cascade answers a streaming client with a well-formed stream
            chunks = list(client.chat.completions.create(model="x", max_tokens=8, messages=MSG,
                                                         stream=True))
            assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            assert s.metric("edgepick_edge_confidence_count") >= 2


def test_policy_signals_send_to_the_cloud_with_hysteresis(tiny_model, tmp_path):
    signals = tmp_path / "signals.json"
    signals.write_text('{"battery_percent": 50, "on_ac": false}')
    with fake_cloud() as cloud:
        pol = policy(tmp_path, cloud.url, signals_file=str(signals))
        with serve(["-m", tiny_model, *EDGE, "--policy", str(pol)], tmp_path) as s:
            route = lambda: ask(s)[1]["x-edgepick-route"]  # noqa: E731
            first = ask(s)
            assert first[1]["x-edgepick-route"] == "edge", (first[1], first[2])
            signals.write_text('{"battery_percent": 15, "on_ac": false}')
            wait_until("battery low → cloud", lambda: route() == "cloud", 20)
            assert ask(s)[1]["x-edgepick-route-reason"] == "policy:battery_low"
            signals.write_text('{"battery_percent": 23, "on_ac": false}')  # inside the band
            # the router re-reads the signals every 2 s: until it has seen 23, prove nothing
            wait_until("the router has read 23%", lambda: route() == "cloud" and s.metric(
                "edgepick_route_device_signal", signal="battery_percent") == 23, 20)
            assert route() == "cloud"  # inside the hysteresis band: still the cloud
            signals.write_text('{"battery_percent": 30, "on_ac": false}')
            wait_until("battery back → edge", lambda: route() == "edge", 20)
            h = ask(s, headers={"x-edgepick-task": "math"})[1]  # a weak task adds its weight
            assert h["x-edgepick-route"] == "cloud" and h["x-edgepick-route-reason"] == \
                "policy:weak_task:math"


def test_edge_engine_restarting_mid_request(tiny_model, tmp_path):
    with fake_cloud() as cloud, \
            serve(["-m", tiny_model, *EDGE, "--max-tokens", "2000", "--ctx", "4096", "--policy",
                   str(policy(tmp_path, cloud.url))], tmp_path) as s:
        box: list = []

        def long_request() -> None:
            box.append(ask(s, max_tokens=2000, messages=[
                {"role": "user", "content": "Write a very long story."}]))

        t = threading.Thread(target=long_request)
        t.start()
        wait_until("generation under way", lambda: any(sl.get("is_processing")
                                                        for sl in s.engine_slots()), 30)
        (port,) = s.engine_ports()
        import psutil

        for p in psutil.Process(s.proc.pid).children(recursive=True):
            if "--port" in (p.cmdline() or []):
                os.kill(p.pid, signal.SIGKILL)  # the engine dies mid-request
        t.join(timeout=120)
        st, h, text = box[0]
        assert st == 200 and h["x-edgepick-route"] == "cloud-escalated" and text == CLOUD_TEXT
        assert h["x-edgepick-route-reason"] == "edge_unavailable"
        wait_until("engine restarted", lambda: s.engine_ports() not in ([], [port]), 60)
        wait_until("edge serving again", lambda: ask(s)[1].get("x-edgepick-route") == "edge", 60)


def test_long_chat_is_cut_to_the_context_budget(tiny_model, tmp_path):
    long_history = []
    for i in range(30):
        long_history += [{"role": "user", "content": f"Question {i}: what is item {i} about? " * 3},
                         {"role": "assistant", "content": f"Item {i} is about topic {i}. " * 3}]
    messages = [{"role": "system", "content": "You are terse."}, *long_history,
                {"role": "user", "content": "And the last one?"}]
    with serve(["-m", tiny_model, *EDGE, "--max-tokens", "16", "--policy",
                str(policy(tmp_path, "http://127.0.0.1:9/v1"))], tmp_path) as s:
        st, h, text = ask(s, messages=messages)
        assert st == 200 and text
        assert h["x-edgepick-route"] == "edge"  # the cloud is unreachable, the input long
        ctx = dict(kv.split("=") for kv in h["x-edgepick-context"].split(";"))
        assert int(ctx["turns_dropped"]) > 0 and int(ctx["tokens"]) <= int(ctx["budget"]) == 358
        assert s.metric("edgepick_context_truncations_total") == 1
        assert s.metric("edgepick_context_dropped_total", what="turns") == int(ctx["turns_dropped"])


def test_mode_and_cloud_flags_without_a_policy_file(tiny_model, tmp_path, cli):
    with fake_cloud() as cloud, \
            serve(["-m", tiny_model, *EDGE, "--mode", "cloud_first", "--cloud",
                   cloud.url + "#cloud"], tmp_path) as s:
        st, h, text = ask(s)
        assert (st, h["x-edgepick-route"], text) == (200, "cloud", CLOUD_TEXT)
    r = cli("serve", "-m", tiny_model, "--mode", "sideways", "--cloud", "http://127.0.0.1:9/v1")
    assert r.returncode == 2 and "route.mode" in r.stderr and "Traceback" not in r.stderr


def test_format_validator_escalates_and_serve_signals_reach_the_router(tiny_model, tmp_path):
    signals = tmp_path / "serve-signals.yaml"
    signals.write_text("battery_percent: 5\non_ac: false\n")
    with fake_cloud() as cloud:
        pol = policy(tmp_path, cloud.url, validator={"kind": "json"})
        text = pol.read_text().replace("  signals_file:", "  # signals_file:")
        pol.write_text(text)  # the router takes serve's --signals file instead
        with serve(["-m", tiny_model, *EDGE, "--policy", str(pol), "--signals", str(signals)],
                   tmp_path) as s:
            st, h, text = ask(s)
            assert (st, h["x-edgepick-route"], text) == (200, "cloud", CLOUD_TEXT)
            assert h["x-edgepick-route-reason"] == "policy:battery_low"
            signals.write_text("battery_percent: 90\non_ac: true\n")
            wait_until("battery back → edge path", lambda: ask(s)[1]["x-edgepick-route"] != "cloud",
                       20)
            st, h, text = ask(s)  # the tiny model writes no JSON: the validator escalates
            assert (st, h["x-edgepick-route"], text) == (200, "cloud-escalated", CLOUD_TEXT)
            assert h["x-edgepick-route-reason"] == "format_invalid"
