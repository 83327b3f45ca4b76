"""One client for llama-server and other OpenAI-compatible servers: tokenize, props, the wait
for health, and the SSE relay. Every caller (the `openai_http` backend, serve, route, agent)
uses these, over its own `httpx.Client` or `httpx.AsyncClient`, so each endpoint's request and
answer shape is written once.

llama-server's endpoints (tools/server/server.cpp of the pinned llama.cpp): `/health` is public,
everything else needs `Authorization: Bearer KEY` when the server was started with a key.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import AsyncIterator, Callable, Iterable, Iterator

import httpx

from edgepick.errors import EdgepickError


def root_of(url: str) -> str:
    """`http://host:port/v1` (or with a trailing slash) → `http://host:port`."""
    return url.rstrip("/").removesuffix("/v1")


def bearer(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


# -- tokenizer ----------------------------------------------------------------------------------
def _tokenize_body(text: str, add_special: bool, parse_special: bool) -> dict:
    return {"content": text, "add_special": add_special, "parse_special": parse_special}


def _token_ids(resp: httpx.Response, where: str) -> list[int]:
    if resp.status_code == 404:
        raise EdgepickError(f"{where}: the server offers no /tokenize endpoint, so operations "
                            "that need exact token counts cannot run against it")
    check(resp)
    return [t if isinstance(t, int) else t["id"] for t in resp.json()["tokens"]]


def tokenize(client: httpx.Client, text: str, add_special: bool = True,
             parse_special: bool = True, root: str = "") -> list[int]:
    r = client.post(f"{root}/tokenize", json=_tokenize_body(text, add_special, parse_special))
    return _token_ids(r, root or str(client.base_url))


async def atokenize(client: httpx.AsyncClient, text: str, add_special: bool = True,
                    parse_special: bool = True, root: str = "") -> list[int]:
    r = await client.post(f"{root}/tokenize",
                          json=_tokenize_body(text, add_special, parse_special))
    return _token_ids(r, root or str(client.base_url))


def detokenize(client: httpx.Client, tokens: list[int], root: str = "") -> str:
    r = client.post(f"{root}/detokenize", json={"tokens": tokens})
    if r.status_code == 404:
        raise EdgepickError(f"{root or client.base_url}: the server offers no /detokenize endpoint")
    check(r)
    return r.json().get("content", "")


async def adetokenize(client: httpx.AsyncClient, tokens: list[int], root: str = "") -> str:
    r = await client.post(f"{root}/detokenize", json={"tokens": tokens})
    check(r)
    return r.json().get("content", "")


def apply_template(client: httpx.Client, messages: list[dict], root: str = "") -> str:
    r = client.post(f"{root}/apply-template", json={"messages": messages})
    check(r)
    return r.json()["prompt"]


# -- what the server says about itself ----------------------------------------------------------
def props(client: httpx.Client, root: str = "") -> dict | None:
    """llama-server's GET /props, or None from a server without it (absence is not an error)."""
    try:
        r = client.get(f"{root}/props")
        return r.json() if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


async def aprops(client: httpx.AsyncClient, root: str = "") -> dict | None:
    try:
        r = await client.get(f"{root}/props")
        return r.json() if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def wait_healthy(url: str, alive: Callable[[], bool], timeout_s: float,
                 what: str = "server", poll_s: float = 0.05) -> None:
    """Until `url` (a /health) answers 200; raises when the process is gone (`alive()` false)
    or the timeout passes."""
    end = time.monotonic() + timeout_s
    with httpx.Client(timeout=2.0) as client:
        while True:
            if not alive():
                raise EdgepickError(f"{what} exited before it was ready")
            try:
                if client.get(url).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > end:
                raise EdgepickError(f"{what} was not ready after {timeout_s:.0f} s")
            time.sleep(poll_s)


async def await_healthy(client: httpx.AsyncClient, exited: Callable[[], int | None],
                        poll_s: float = 0.05) -> None:
    """Until GET /health answers 200 (bound it with asyncio.wait_for); raises EdgepickError
    when `exited()` gives the process's exit code."""
    while True:
        code = exited()
        if code is not None:
            raise EdgepickError(f"exited with code {code}")
        try:
            if (await client.get("/health", timeout=2.0)).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        await asyncio.sleep(poll_s)


async def probe(client: httpx.AsyncClient, timeout_s: float) -> bool:
    """One cheap liveness probe: does GET /health answer 200 within `timeout_s`?"""
    try:
        return (await client.get("/health", timeout=timeout_s)).status_code == 200
    except (httpx.HTTPError, RuntimeError):  # RuntimeError: the client was closed under us
        return False


# -- errors -------------------------------------------------------------------------------------
def error_message(payload: object) -> str | None:
    """The message of an OpenAI-shaped (or llama-server's) error body."""
    if isinstance(payload, dict):
        err = payload.get("error")
        if isinstance(err, dict):
            return str(err.get("message"))
        if isinstance(err, str):
            return err
    return None


def check(r: httpx.Response) -> None:
    """Raise one line for a 4xx/5xx answer, with the server's own message."""
    if r.status_code < 400:
        return
    try:
        detail = error_message(r.json()) or r.text
    except ValueError:
        detail = r.text
    raise EdgepickError(f"{r.request.url}: HTTP {r.status_code}: {str(detail)[:200]}")


# -- server-sent events -------------------------------------------------------------------------
class SseSplitter:
    """Cuts a byte stream into whole SSE events; the one splitter behind the async and the
    sync readers below, and behind serve's relay, which feeds it piece by piece so it can
    forward each piece's whole events together."""

    def __init__(self) -> None:
        self.buf = b""

    def feed(self, piece: bytes) -> list[bytes]:
        self.buf += piece
        # a CRLF may itself be split across pieces: normalise only what is whole so far
        whole, cr = (self.buf[:-1], b"\r") if self.buf.endswith(b"\r") else (self.buf, b"")
        self.buf = whole.replace(b"\r\n", b"\n") + cr
        out = []
        while b"\n\n" in self.buf:
            ev, self.buf = self.buf.split(b"\n\n", 1)
            if ev.strip():
                out.append(ev + b"\n\n")
        return out

    def rest(self) -> list[bytes]:
        return [self.buf + b"\n\n"] if self.buf.strip() else []


async def sse_events(raw: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Whole SSE events (`data: ...\\n\\n`), however the bytes were split on the wire."""
    events = SseSplitter()
    async for piece in raw:
        for ev in events.feed(piece):
            yield ev
    for ev in events.rest():
        yield ev


def iter_sse_events(raw: Iterable[bytes]) -> Iterator[bytes]:
    """`sse_events` over a blocking stream (`httpx.Response.iter_bytes()`)."""
    events = SseSplitter()
    for piece in raw:
        yield from events.feed(piece)
    yield from events.rest()


def event_data(ev: bytes) -> str | None:
    """An event's data (its `data:` lines joined by newlines, as the SSE format says), or None
    for an event without any (a comment, a bare `event:` line)."""
    lines = [ln[5:].removeprefix(" ") for ln in ev.decode("utf-8", "replace").split("\n")
             if ln.startswith("data:")]
    return "\n".join(lines) if lines else None


def event_json(ev: bytes) -> object | None:
    """An event's data parsed as JSON, or None for an event without data, the closing
    `[DONE]` or data that is not JSON (relayed as it is, never an error here)."""
    data = event_data(ev)
    if data is None or is_done(ev):
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def is_done(ev: bytes) -> bool:
    """Is this the closing `data: [DONE]` event of an OpenAI-style stream?"""
    data = event_data(ev)
    return data is not None and data.strip() == "[DONE]"


def iter_sse_chunks(raw: Iterable[bytes], where: str) -> Iterator[dict]:
    """The JSON chunks of an OpenAI-style stream, each as it arrives, until `data: [DONE]`;
    a chunk carrying an `error` is raised as one line naming `where`."""
    for ev in iter_sse_events(raw):
        data = event_data(ev)
        if data is None:
            continue
        if data.strip() == "[DONE]":
            return
        chunk = json.loads(data)
        if isinstance(chunk, dict) and "error" in chunk:
            raise EdgepickError(f"{where}: server error: {chunk['error']}")
        yield chunk


def _loop_time(deadline: float) -> float:
    """asyncio's clock is time.monotonic on Linux, but convert explicitly to be safe."""
    return asyncio.get_running_loop().time() + (deadline - time.monotonic())


async def relay(source: AsyncIterator[bytes], deadline: float,
                on_error: Callable[[BaseException], bytes]) -> AsyncIterator[bytes]:
    """`source`'s whole SSE events, each piece's together, until it ends, the deadline
    (time.monotonic) passes or the connection is lost; then the one closing event
    `on_error(exc)` gives (a TimeoutError or an httpx.HTTPError). An event the lost connection
    cut off is dropped: sent, the closing event would run on from its unfinished line and the
    client would read one broken event. The deadline guards each read only, never the
    consumer's own awaits between pieces."""
    it = source.__aiter__()
    at = _loop_time(deadline)
    events = SseSplitter()
    while True:
        try:
            async with asyncio.timeout_at(at):
                piece = await it.__anext__()
        except StopAsyncIteration:
            for ev in events.rest():
                yield ev
            return
        except (TimeoutError, httpx.HTTPError) as exc:
            yield on_error(exc)
            return
        whole = b"".join(events.feed(piece))
        if whole:
            yield whole
