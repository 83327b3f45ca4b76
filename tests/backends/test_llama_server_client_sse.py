"""The one SSE reader of `backends/llama_server_client.py` (serve, route and the openai_http
backend read streams through it): whole events however the bytes were cut on the wire."""

from __future__ import annotations

import asyncio
import time

import pytest

from edgepick.backends import llama_server_client as lsc
from edgepick.errors import EdgepickError

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


def test_the_blocking_reader_cuts_the_same_events():
    for cut in range(1, len(WIRE)):
        assert list(lsc.iter_sse_events(iter([WIRE[:cut], WIRE[cut:]]))) == EVENTS, cut


def test_chunks_until_done_and_a_server_error_is_one_line():
    wire = b': a comment\n\ndata: {"a": 1}\n\ndata: [DONE]\n\ndata: {"after": 1}\n\n'
    assert list(lsc.iter_sse_chunks(iter([wire]), "here")) == [{"a": 1}]
    with pytest.raises(EdgepickError, match=r"^here: server error: boom$"):
        list(lsc.iter_sse_chunks(iter([b'data: {"error": "boom"}\n\n']), "here"))


def test_an_event_of_several_data_lines_is_one_datum():
    assert lsc.event_data(b'data: {"a":\ndata: 1}\n\n') == '{"a":\n1}'
    assert lsc.event_data(b"event: ping\n\n") is None


def test_event_json_and_the_closing_event():
    assert lsc.event_json(b'data: {"a": 1}\n\n') == {"a": 1}
    assert lsc.event_json(b"data: [DONE]\n\n") is None  # the end, not a chunk
    assert lsc.event_json(b"data: not json\n\n") is None
    assert lsc.event_json(b": a comment\n\n") is None
    assert lsc.is_done(b"data: [DONE]\n\n") and lsc.is_done(b"data:[DONE] \n\n")
    assert not lsc.is_done(b'data: {"a": 1}\n\n') and not lsc.is_done(b": [DONE]\n\n")


def test_the_splitter_fed_piece_by_piece_gives_each_piece_its_whole_events():
    # serve's relay feeds it this way, to forward a piece's events in one write
    events = lsc.SseSplitter()
    assert events.feed(WIRE[:10]) == []
    assert events.feed(WIRE[10:]) == EVENTS
    assert events.rest() == []


def test_a_relay_cut_mid_event_drops_the_half_event_and_ends_with_one_whole_error():
    """An engine killed while writing an event (serve's memory-limit restart): the client gets
    the events that were whole, then the closing error as an event of its own, never the half
    event run on into it."""
    import httpx

    async def source():
        yield b'data: {"a": 1}\n\ndata: {"choices":[{'
        raise httpx.RemoteProtocolError("peer closed connection")

    async def collect():
        return [p async for p in lsc.relay(source(), time.monotonic() + 60,
                                           lambda exc: b'data: {"error": {"code": "x"}}\n\n')]

    out = asyncio.run(collect())
    assert out == [b'data: {"a": 1}\n\n', b'data: {"error": {"code": "x"}}\n\n']
    events = [e for p in out for e in lsc.SseSplitter().feed(p)]
    assert all(isinstance(lsc.event_json(e), dict) for e in events)


def test_a_relay_that_ends_cleanly_passes_every_byte_on():
    async def collect(pieces):
        return b"".join([p async for p in lsc.relay(_pieces(pieces), time.monotonic() + 60,
                                                    lambda exc: b"never")])

    for cut in range(1, len(WIRE)):
        assert asyncio.run(collect([WIRE[:cut], WIRE[cut:]])) == b"".join(EVENTS), cut
