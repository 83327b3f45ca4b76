"""Bounded admission (429 + Retry-After beyond slots + queue), deadlines (504), and client
disconnect cancelling the generation in the engine — with a real llama-server, observed through
state (metrics, the engine's own slot use read through edgepick), never through timing."""

from __future__ import annotations

import threading

import httpx
import openai
import pytest

from serve_harness import serve, wait_until

LONG = 2000  # tokens a held request would generate; it is always cut short by the test
MSG = [{"role": "user", "content": "Write a very long story."}]


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve_adm")
    with serve(["-m", tiny_model, "--slots", "1", "--queue", "1", "--max-tokens", str(LONG),
                "--ctx", "4096", "--deadline", "120"], tmp) as s:
        yield s


def _client(server) -> openai.OpenAI:
    return server.openai("none", timeout=120)


def _idle(server) -> bool:
    return (server.metric("edgepick_busy_slots") == 0
            and server.metric("edgepick_queue_depth") == 0)


def test_overload_gets_429_with_retry_after(server):
    client = _client(server)
    held = client.chat.completions.create(model="x", max_tokens=LONG, stream=True, messages=MSG,
                                          extra_body={"ignore_eos": True})
    next(iter(held))  # running: it holds the only slot
    queued_result: list = []

    def queued() -> None:
        out = _client(server).chat.completions.create(model="x", max_tokens=4, messages=MSG)
        queued_result.append(out)

    t = threading.Thread(target=queued, daemon=True)
    t.start()
    wait_until("one request queued", lambda: server.metric("edgepick_queue_depth") == 1, 30)
    with pytest.raises(openai.RateLimitError) as exc:
        client.chat.completions.create(model="x", max_tokens=4, messages=MSG)
    assert int(exc.value.response.headers["retry-after"]) >= 1
    assert server.metric("edgepick_rejections_total", reason="overloaded") == 1
    held.close()  # frees the slot: the queued request is kept and served
    t.join(timeout=60)
    assert queued_result and queued_result[0].choices[0].message.content is not None
    wait_until("idle", lambda: _idle(server), 30)


def test_client_disconnect_cancels_generation(server):
    before = server.slot_use()["engine_tokens_predicted"]
    stream = _client(server).chat.completions.create(
        model="x", max_tokens=LONG, stream=True, messages=MSG, extra_body={"ignore_eos": True})
    it = iter(stream)
    for _ in range(3):
        next(it)
    stream.close()
    wait_until("the slot freed", lambda: _idle(server), 30)
    # llama-server notices a closed connection at its next poll (1 s for non-streaming requests,
    # more on a busy host); a cancelled task ends with fewer tokens than asked, a finished one not
    wait_until("the engine idle", lambda: server.slot_use()["engine_processing"] == 0, 120)
    # the engine counts a slot's tokens when it is released: fewer than asked, so cut short
    assert 0 < server.slot_use()["engine_tokens_predicted"] - before < LONG
    assert server.metric("edgepick_requests_total", endpoint="/v1/chat/completions",
                         status="499") >= 1


def test_non_streaming_disconnect_cancels_generation(server):
    before = server.slot_use()["engine_tokens_predicted"]
    body = {"model": "x", "max_tokens": LONG, "messages": MSG, "ignore_eos": True}
    with pytest.raises(httpx.ReadTimeout):
        with httpx.Client(timeout=httpx.Timeout(10, read=1.0)) as c:
            c.post(server.v1 + "/chat/completions", json=body)
    wait_until("the slot freed", lambda: _idle(server), 30)
    # llama-server notices a closed connection at its next poll (1 s for non-streaming requests,
    # more on a busy host); a cancelled task ends with fewer tokens than asked, a finished one not
    wait_until("the engine idle", lambda: server.slot_use()["engine_processing"] == 0, 120)
    assert 0 < server.slot_use()["engine_tokens_predicted"] - before < LONG


def test_deadline_covers_generation_and_queue(tiny_model, tmp_path):
    with serve(["-m", tiny_model, "--slots", "1", "--queue", "2", "--max-tokens", str(LONG),
                "--ctx", "4096", "--deadline", "1"], tmp_path) as s:
        client = _client(s)
        with pytest.raises(openai.APIStatusError) as exc:
            client.chat.completions.create(model="x", max_tokens=LONG, messages=MSG,
                                           extra_body={"ignore_eos": True})
        assert exc.value.status_code == 504
        # streaming: the stream ends with an error event once the deadline passes
        with httpx.stream("POST", s.v1 + "/chat/completions", timeout=60, json={
                "model": "x", "max_tokens": LONG, "messages": MSG, "stream": True,
                "ignore_eos": True}) as r:
            events = list(r.iter_lines())
        assert any("deadline" in e for e in events)
        assert s.metric("edgepick_requests_total", status="504") == 2
        wait_until("idle", lambda: _idle(s), 30)
