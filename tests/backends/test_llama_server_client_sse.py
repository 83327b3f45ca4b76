"""The one SSE reader of `backends/llama_server_client.py` (serve, route and the openai_http
backend read streams through it): whole events however the bytes were cut on the wire."""

from __future__ import annotations

import asyncio

from edgepick.backends import llama_server_client as lsc

WIRE = b'data: {"a": 1}\r\n\r\ndata: {"b": 2}\r\n\r\ndata: [DONE]\r\n\r\n'
EVENTS = [b'data: {"a": 1}\n\n', b'data: {"b": 2}\n\n', b"data: [DONE]\n\n"]


async def _pieces(pieces):
    for p in pieces:
        yield p


def _async_events(pieces) -> list[bytes]:
    async def collect():
        return [ev async for ev in lsc.sse_events(_pieces(pieces))]
    return asyncio.run(collect())


def test_events_are_whole_at_every_cut_of_the_wire():
    for cut in range(1, len(WIRE)):
        assert _async_events([WIRE[:cut], WIRE[cut:]]) == EVENTS, cut


def test_bytes_one_at_a_time():
    assert _async_events([WIRE[i:i + 1] for i in range(len(WIRE))]) == EVENTS
