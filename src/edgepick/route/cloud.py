"""The cloud side: any OpenAI-compatible endpoint, its key read from an environment variable,
reached with async httpx. A cloud that is down, slow to its first chunk, failing or answering
nonsense raises a `CloudError` before anything reaches the client, so the router can still
answer from the edge (seed 000 §6.3: offline is the normal case on a device).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import AsyncIterator

import httpx

from edgepick.backends import llama_server_client as lsc
from edgepick.serve.engine.send import sse_error
from edgepick.serve.router_api import ServedResponse, ServeError

PATHS = {"chat": "/chat/completions", "completion": "/completions"}


class CloudError(ServeError):
    """The cloud could not answer; `why` is a short reason for headers and metrics."""

    status, code = 502, "cloud_error"

    def __init__(self, why: str, message: str) -> None:
        super().__init__(message)
        self.why = why


class CloudClient:
    def __init__(self, url: str, model: str | None = None, api_key_env: str | None = None,
                 first_chunk_timeout_s: float = 5.0, timeout_s: float = 60.0) -> None:
        self.base = url.rstrip("/")
        if not self.base.endswith("/v1"):
            self.base += "/v1"
        self.model = model
        self.api_key_env = api_key_env
        self.first_chunk_timeout_s = first_chunk_timeout_s
        self.timeout_s = timeout_s
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=min(
            first_chunk_timeout_s, 5.0)))

    @classmethod
    def from_policy(cls, cloud) -> "CloudClient":
        return cls(cloud.url, cloud.model, cloud.api_key_env, cloud.first_chunk_timeout_s,
                   cloud.timeout_s)

    def headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env or "", "")
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _payload(self, body: dict, stream: bool) -> dict:
        payload = {k: v for k, v in body.items() if k != "metadata"}
        payload["stream"] = stream
        if stream:  # counted either way; the client sees usage only when it asked (relay.py)
            payload["stream_options"] = {"include_usage": True}
        if self.model:
            payload["model"] = self.model
        return payload

    async def forward(self, kind: str, body: dict, stream: bool, deadline: float) -> ServedResponse:
        url = self.base + PATHS[kind]
        left = deadline - time.monotonic()
        if left <= 0:
            raise CloudError("deadline", "cloud: no time left before the request's deadline")
        req = self._client.build_request("POST", url, json=self._payload(body, stream),
                                         headers=self.headers())
        t0 = time.monotonic()
        if not stream:
            try:
                async with asyncio.timeout(min(left, self.timeout_s)):
                    resp = await self._client.send(req)
            except (TimeoutError, httpx.TimeoutException):
                raise CloudError("slow", f"cloud: no answer within {min(left, self.timeout_s):.1f} s") from None
            except httpx.HTTPError as exc:
                raise CloudError("unreachable", f"cloud: unreachable ({type(exc).__name__})") from None
            data = _checked_body(resp)
            return ServedResponse(body=data, headers={"x-edgepick-cloud-ms":
                                                      f"{(time.monotonic() - t0) * 1e3:.0f}"})
        return await self._stream(req, deadline, t0)

    async def _stream(self, req: httpx.Request, deadline: float, t0: float) -> ServedResponse:
        """Opens the stream and reads up to its first data event before committing, so a cloud
        that fails there can still be replaced by the edge."""
        first_by = min(deadline - time.monotonic(), self.first_chunk_timeout_s)
        resp: httpx.Response | None = None
        try:
            async with asyncio.timeout(first_by):
                resp = await self._client.send(req, stream=True)
                if resp.status_code != 200:
                    await resp.aread()
                    _checked_body(resp)  # raises with the cloud's own error
                events = lsc.sse_events(resp.aiter_bytes())
                head = await anext(events)
        except (TimeoutError, httpx.TimeoutException):
            await _close(resp)
            raise CloudError("slow", f"cloud: no first chunk within {first_by:.1f} s") from None
        except StopAsyncIteration:
            await _close(resp)
            raise CloudError("malformed", "cloud: the stream ended before any data") from None
        except httpx.HTTPError as exc:
            await _close(resp)
            raise CloudError("unreachable", f"cloud: unreachable ({type(exc).__name__})") from None
        except CloudError:
            await _close(resp)
            raise
        if not _valid_event(head):
            await _close(resp)
            raise CloudError("malformed", f"cloud: malformed stream event {head[:60]!r}")

        async def chunks() -> AsyncIterator[bytes]:
            yield head
            async for ev in lsc.relay(events, deadline, _lost):
                yield ev

        gen = chunks()

        async def close() -> None:
            await gen.aclose()
            await _close(resp)

        ms = f"{(time.monotonic() - t0) * 1e3:.0f}"
        return ServedResponse(chunks=gen, headers={"x-edgepick-cloud-first-chunk-ms": ms},
                              _closer=close)

    async def aclose(self) -> None:
        await self._client.aclose()


def _lost(exc: BaseException) -> bytes:
    return sse_error(CloudError("lost", f"cloud stream cut ({type(exc).__name__})"), 502)


async def _close(resp: httpx.Response | None) -> None:
    if resp is not None:
        await resp.aclose()


def _checked_body(resp: httpx.Response) -> dict:
    if resp.status_code != 200:
        raise CloudError(f"http_{resp.status_code}",
                         f"cloud: HTTP {resp.status_code}: {resp.text[:120]}")
    try:
        data = resp.json()
    except ValueError:
        raise CloudError("malformed", f"cloud: not JSON: {resp.text[:60]!r}") from None
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
        raise CloudError("malformed", "cloud: JSON without choices")
    return data


def _valid_event(ev: bytes) -> bool:
    """Is the first event one the relay can pass on: the closing [DONE] or a chunk with choices?"""
    if lsc.is_done(ev):
        return True
    obj = lsc.event_json(ev)
    return isinstance(obj, dict) and isinstance(obj.get("choices"), list)
