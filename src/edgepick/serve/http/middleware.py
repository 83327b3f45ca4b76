"""The ASGI layer in front of every endpoint: a request id on every answer and log line, and
bounded headers; protocol upgrades refused, and a bug answered as a 500 in OpenAI's
shape with its request id (Starlette's own 500 comes from outside every
middleware, without one). Pure ASGI, not Starlette's BaseHTTPMiddleware, so streams and client
disconnects pass through untouched."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import uuid

from edgepick.serve.errors import BadRequest, HeadersTooLarge, ServeError, shape

REQUEST_ID = "x-request-id"
MAX_HEADERS = 100
MAX_HEADER_BYTES = 32 * 1024
_VALID_ID = re.compile(r"^[A-Za-z0-9._:/+=@-]{1,128}$")

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


class RequestIdFilter(logging.Filter):
    """Puts `%(request_id)s` on every log record (the request being served, or `-`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


log = logging.getLogger("edgepick.serve")


async def _refuse(send, err: ServeError, rid: str, close: bool = False,
                  path: str = "") -> None:
    _, status, payload = shape(err, path)
    body = json.dumps(payload).encode()  # ASCII: a quoted surrogate cannot break it
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode()), (REQUEST_ID.encode(), rid.encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _upgrade(headers) -> str | None:
    """The protocol a request asks to switch to (`Connection: upgrade` + `Upgrade: X`)."""
    wanted = None
    connection = b""
    for k, v in headers:
        if k == b"upgrade":
            wanted = v.decode("latin-1")
        elif k == b"connection":
            connection += v.lower()
    return wanted if wanted and b"upgrade" in connection else None


class RequestGuard:
    """Echo the client's `x-request-id` (when it is a sane token) or make one; expose it as
    `request.state.request_id`; refuse more than MAX_HEADERS headers or MAX_HEADER_BYTES of
    them with a 431 in the OpenAI error shape."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "websocket":  # only under a server run with websockets on
            return await send({"type": "websocket.close", "code": 1008})
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = scope["headers"]
        given = ""
        size = 0
        for k, v in headers:
            size += len(k) + len(v)
            if k == b"x-request-id":
                given = v.decode("latin-1")
        rid = given if _VALID_ID.match(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid
        token = request_id.set(rid)
        try:
            if len(headers) > MAX_HEADERS or size > MAX_HEADER_BYTES:
                err = HeadersTooLarge(f"request headers are too large: {len(headers)} headers, "
                                      f"{size} bytes (at most {MAX_HEADERS} headers and "
                                      f"{MAX_HEADER_BYTES} bytes)")
                return await _refuse(send, err, rid, path=scope.get("path", ""))
            wanted = _upgrade(headers)
            if wanted is not None:  # its body would not be parsed (httptools stops at it)
                return await _refuse(send, BadRequest(
                    f"protocol upgrade to '{wanted[:40]}' is not supported: this server "
                    "speaks HTTP/1.1 only", code="unsupported_upgrade"), rid, close=True,
                    path=scope.get("path", ""))
            started = False

            async def send_with_id(message) -> None:
                nonlocal started
                if message["type"] == "http.response.start":
                    started = True
                    out = [(k, v) for k, v in message.get("headers", []) if k != b"x-request-id"]
                    out.append((b"x-request-id", rid.encode()))
                    message = dict(message, headers=out)
                await send(message)

            try:
                await self.app(scope, receive, send_with_id)
            except Exception as exc:
                log.exception("request failed")
                if started:
                    raise  # the answer is under way: only closing the connection is left
                await _refuse(send, ServeError(f"internal error ({type(exc).__name__})"), rid,
                              path=scope.get("path", ""))
        finally:
            request_id.reset(token)
