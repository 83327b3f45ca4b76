"""serve's stream relay over the client module's SSE splitter (issue 23 item 5): what the
client receives and what the answer measured, however the engine's bytes were cut."""

from __future__ import annotations

import asyncio
import json

from edgepick.serve.http.relay import Outcome, relay_stream
from edgepick.serve.router_api import ServedResponse


def _chunk(content=None, finish=None, usage=None, choices=True) -> bytes:
    ev: dict = {"choices": [{"delta": {"content": content} if content else {},
                             "finish_reason": finish}] if choices else []}
    if usage:
        ev["usage"] = usage
    return b"data: " + json.dumps(ev).encode() + b"\n\n"


USAGE = {"prompt_tokens": 5, "completion_tokens": 2}
WIRE = (b": keep-alive\n\n" + _chunk("Hel") + _chunk("lo", finish="stop")
        + _chunk(usage=USAGE, choices=False) + b"data: [DONE]\n\n")


def _relay(pieces: list[bytes], include_usage: bool) -> tuple[list[bytes], Outcome]:
    async def source():
        for p in pieces:
            yield p

    done: list[Outcome] = []

    async def collect():
        resp = ServedResponse(chunks=source())
        return [w async for w in relay_stream(resp, 0.0, True, done.append, include_usage)]

    writes = asyncio.run(collect())
    assert len(done) == 1  # finish runs once
    return writes, done[0]


def test_every_cut_of_the_wire_relays_the_same_events_and_measures():
    for cut in range(1, len(WIRE)):
        writes, out = _relay([WIRE[:cut], WIRE[cut:]], include_usage=True)
        assert b"".join(writes) == WIRE, cut
        assert "".join(out.text) == "Hello" and out.finish_reason == "stop"
        assert (out.prompt_tokens, out.completion_tokens, out.status) == (5, 2, 200)
        assert out.first_s is not None and len(out.gaps) == 1


def test_the_usage_only_chunk_is_dropped_unless_the_client_asked():
    writes, out = _relay([WIRE], include_usage=False)
    assert len(writes) == 1  # one piece in, its events out in one write
    assert b"".join(writes) == WIRE.replace(_chunk(usage=USAGE, choices=False), b"")
    assert out.completion_tokens == 2  # counted all the same


def test_crlf_events_are_relayed_whole():
    writes, out = _relay([WIRE.replace(b"\n", b"\r\n")], include_usage=True)
    assert b"".join(writes) == WIRE and "".join(out.text) == "Hello"


def test_an_engine_error_event_sets_the_status():
    err = b'data: {"error": {"code": 503, "message": "busy", "type": "unavailable_error"}}\n\n'
    writes, out = _relay([err], include_usage=True)
    assert out.status == 503
    assert b"busy" in b"".join(writes)
