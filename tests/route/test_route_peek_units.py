"""The router peeks at a stream's first event through the client module's SSE reader (issue
23 item 5): an engine lost before its first token is routed around, a token goes through."""

from __future__ import annotations

import asyncio

import pytest

from edgepick.route.router import _peeked
from edgepick.serve.router_api import EngineUnavailable, ServedResponse

ERROR = b'data: {"error": {"code": "engine_lost", "message": "lost"}}\n\n'
TOKEN = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\n'


def _peek(pieces: list[bytes]) -> list[bytes]:
    closed: list[bool] = []

    async def source():
        for p in pieces:
            yield p

    async def close():
        closed.append(True)

    async def go():
        resp = await _peeked(ServedResponse(chunks=source(), _closer=close))
        return [c async for c in resp.chunks]
    try:
        return asyncio.run(go())
    finally:
        assert not pieces or pieces[0] != ERROR or closed  # an error frees the engine's slot


def test_an_error_first_is_raised_for_the_router_to_route_around():
    with pytest.raises(EngineUnavailable, match="before its first token"):
        _peek([ERROR])
    with pytest.raises(EngineUnavailable):
        _peek([ERROR.replace(b"\n", b"\r\n") + TOKEN])  # CRLF, and more events in the piece


def test_a_token_first_goes_through_whole():
    assert _peek([TOKEN, b"data: [DONE]\n\n"]) == [TOKEN, b"data: [DONE]\n\n"]
    assert _peek([b": keep-alive\n\n" + TOKEN]) == [b": keep-alive\n\n" + TOKEN]
    assert _peek([]) == []
