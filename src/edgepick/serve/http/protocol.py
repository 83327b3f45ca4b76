"""The HTTP/1.1 server under the app: uvicorn's httptools protocol (the C parser serve pins),
with its own refusals replaced.

uvicorn answers a request its parser rejects (a bad Content-Length, `Transfer-Encoding:
identity`, a lowercase method, an HTTP/2 preface, NUL bytes) itself, below the app, with
`400 text/plain "Invalid HTTP request received."` and no request id, and it drops the answer to
a valid request pipelined before the garbage. It has no header timeout: a client that sends half
its headers holds the connection forever (slowloris). This protocol:

- answers a parse error in OpenAI's error shape with an `x-request-id`, after the answers to the
  requests parsed before it;
- closes a connection whose request headers are not complete `header_timeout` seconds after the
  connection opened or its previous answer ended (408 in OpenAI's shape when some bytes came);
- leaves upgrades to the app, which refuses them (serve/http/middleware.py): serve runs with
  `ws="none"`, so a websocket handshake reaches the app as a plain HTTP request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from edgepick.serve.errors import BadRequest, RequestTimeout, ServeError, shape

log = logging.getLogger("edgepick.serve")


def refusal_bytes(err: ServeError, request_id: str, path: bytes = b"") -> bytes:
    """A whole HTTP/1.1 response carrying `err`, written straight to the socket; in Ollama's
    shape when the request's path, as far as it was read, is one of its API's."""
    _, status, payload = shape(err, path.decode("latin-1"))
    body = json.dumps(payload).encode()
    head = [STATUS_LINE[status],
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"x-request-id: " + request_id.encode() + b"\r\n",
            b"connection: close\r\n", b"\r\n"]
    return b"".join(head) + body


class EdgepickHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header timeout (slowloris) and every refusal below
    the app in OpenAI's shape, with a request id."""

    header_timeout: float = 10.0
    _header_timer: asyncio.TimerHandle | None = None
    _pending: ServeError | None = None  # a refusal waiting for earlier answers
    _got_bytes = False

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _awaiting_headers(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._got_bytes = False
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or not self._awaiting_headers():
            return
        if self._got_bytes:
            self._write_refusal(RequestTimeout(
                f"request headers not complete within {self.header_timeout:g} s "
                "(--header-timeout)"))
        else:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._pending is not None:
            return  # the parser has failed; the rest of the stream is not read
        if self._header_timer is None and self._awaiting_headers():
            self._arm()  # a new request on a kept-alive connection
        self._got_bytes = True
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._refuse(BadRequest(f"malformed HTTP request ({exc}); this server speaks "
                                    "HTTP/1.1", code="invalid_http_request"))
        except httptools.HttpParserUpgrade:
            pass  # the app refuses the upgrade itself (ws="none": no websocket protocol)

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def _refuse(self, err: ServeError) -> None:
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and cycle.more_body:
            # the error is in the body of the request being served: that request is not
            # served (what the app writes for it is dropped), the refusal answers it
            cycle.disconnected = True
            cycle.message_event.set()
            if cycle.response_started:
                self.transport.close()  # half an answer is out: closing is all that's left
            else:
                self._write_refusal(err)
            return
        if not self._awaiting_headers() or self.pipeline:
            # requests parsed before the garbage are answered first
            self._pending = err
            self.flow.pause_reading()
            return
        self._write_refusal(err)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._pending is not None and not self.pipeline and self._awaiting_headers() \
                and not self.transport.is_closing():
            self._write_refusal(self._pending)
        elif self._awaiting_headers() and not self.transport.is_closing():
            self._arm()

    def _write_refusal(self, err: ServeError) -> None:
        self._disarm()
        self._unset_keepalive_if_required()
        rid = uuid.uuid4().hex
        log.info("[%s] refused below the app: %s %s", rid, err.status, err.message)
        # uvicorn's on_url keeps what the parser read of the request target
        self.transport.write(refusal_bytes(err, rid, bytes(getattr(self, "url", b"") or b"")))
        self.transport.close()

    def send_400_response(self, msg: str) -> None:  # uvicorn's own path, if it is taken
        self._refuse(BadRequest(f"malformed HTTP request ({msg})",
                                code="invalid_http_request"))

    def _unsupported_upgrade_warning(self) -> None:
        pass  # refused by the app, in OpenAI's shape


def protocol_class(header_timeout: float) -> type[asyncio.Protocol]:
    """The protocol class for uvicorn's `http=` setting, with this header timeout."""
    return type("EdgepickHttpProtocol", (EdgepickHttpProtocol,),
                {"header_timeout": header_timeout})
