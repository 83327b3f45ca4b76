"""Sending one request to the engine over loopback HTTP, and the error events a relayed stream
ends with (serve/pool/edge.py's forward path)."""

from __future__ import annotations

import asyncio
import time

import httpx

from edgepick.backends import llama_server_client as lsc
from edgepick.serve.engine.process import EngineProcess
from edgepick.serve.errors import ServeError, sse_event
from edgepick.serve.router_api import DeadlineExceeded, EngineUnavailable, UpstreamError


async def send(engine: EngineProcess, req: httpx.Request, deadline: float,
           stream: bool) -> httpx.Response:
    """The engine's response: open for a 200 stream, read in full otherwise."""
    assert engine.client is not None
    resp: httpx.Response | None = None
    keep = False
    try:
        async with asyncio.timeout_at(_loop_time(deadline)):
            try:
                resp = await engine.client.send(req, stream=True)
            except httpx.RemoteProtocolError:
                # a pooled connection the engine closed as we sent on it: nothing was
                # answered, so once more on a fresh connection, unless the engine itself is
                # gone (the supervisor then closes this client under us)
                if engine.client.is_closed or not engine.alive:
                    raise
                resp = await engine.client.send(req, stream=True)
            if stream and resp.status_code == 200:
                keep = True
            else:
                await resp.aread()
    except TimeoutError:
        raise DeadlineExceeded("deadline passed during generation") from None
    except httpx.HTTPError as exc:
        raise EngineUnavailable(f"engine connection lost ({type(exc).__name__}); "
                                "it is restarting", retry_after=2) from None
    except RuntimeError:
        if not engine.client.is_closed:
            raise
        # the engine died and its client was closed while this request waited on it
        raise EngineUnavailable("engine connection lost; it is restarting",
                                retry_after=2) from None
    finally:
        # a cancelled or failed read must not leave the connection (and the slot) busy
        if resp is not None and not keep:
            await resp.aclose()
    if resp.status_code != 200:
        try:
            payload = resp.json()
        except ValueError:
            payload = None
        message = lsc.error_message(payload) or resp.text[:200]
        raise UpstreamError(f"engine: {message}", status=resp.status_code, payload=payload)
    return resp


def _loop_time(deadline: float) -> float:
    """asyncio's clock is time.monotonic on Linux, but convert explicitly to be safe."""
    loop = asyncio.get_running_loop()
    return loop.time() + (deadline - time.monotonic())


def sse_error(err: ServeError, status: int | None = None) -> bytes:
    """The error event a stream ends with when it cannot finish (headers are already sent):
    OpenAI's shape with the string code, plus the HTTP status it would have had."""
    if status is not None:
        err.status = status
    return sse_event(err)


def relay_error(exc: BaseException) -> bytes:
    if isinstance(exc, TimeoutError):
        return sse_error(DeadlineExceeded("deadline passed during generation"))
    return sse_error(EngineUnavailable("engine connection lost; it is restarting"))
