"""Bounded admission (429 + Retry-After beyond slots + queue), deadlines (504), and client
disconnect cancelling the generation in the engine — with a real llama-server, observed through
state (metrics, the engine's own slot use read through edgepick), never through timing."""

from __future__ import annotations

import json
import socket
import threading

import httpx
import openai
import pytest

from serve_harness import serve, wait_until

LONG = 2000  # tokens a held request would generate; it is always cut short by the test
MSG = [{"role": "user", "content": "Write a very long story."}]


@pytest.fixture(scope="module")
def server(smollm2_q4_1, tmp_path_factory):
    # the real 135M model, not the 2-block one: its LONG tokens take far longer than the
    # engine's 1 s disconnect poll (the 2-block model can write them all within it)
    tmp = tmp_path_factory.mktemp("serve_adm")
    with serve(["-m", smollm2_q4_1, "--slots", "1", "--queue", "1", "--max-tokens", str(LONG),
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


def test_non_streaming_disconnect_cancels_generation(server):
    """llama-server looks at a non-streaming client's socket once no result came for
    HTTP_POLLING_SECONDS (1 s; tools/server/server-context.cpp, server_response_reader::
    wait_for_all with cpp-httplib's is_socket_alive), then cancels the task before its next
    decode. So the test leaves once the engine is decoding for it (its own counters), and
    edgepick holds the slot until the engine has let go: no second request waits inside the
    engine unseen by admission."""
    before = server.slot_use()["engine_tokens_predicted"]
    body = {"model": "x", "max_tokens": LONG, "messages": MSG, "ignore_eos": True}
    sock = socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
    raw = json.dumps(body).encode()
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 b"application/json\r\nContent-Length: " + str(len(raw)).encode() +
                 b"\r\n\r\n" + raw)
    wait_until("the engine decoding it", lambda: server.slot_use()["engine_processing"] == 1)
    sock.close()
    seen = []

    def released() -> bool:
        use = server.slot_use()
        seen.append(use)
        return use["busy"] == 0

    wait_until("the slot freed", released, 60)
    # edgepick's slot was held while the engine still decoded the abandoned request
    assert all(u["busy"] >= u["engine_processing"] for u in seen)
    assert seen[-1]["engine_processing"] == 0 and seen[-1]["engine_deferred"] == 0
    # the engine counts a slot's tokens when it is released: fewer than asked, so cut short
    assert 0 < server.slot_use()["engine_tokens_predicted"] - before < LONG
    assert server.metric("edgepick_requests_total", endpoint="/v1/chat/completions",
                         status="499") >= 1


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
