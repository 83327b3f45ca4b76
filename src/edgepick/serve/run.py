"""Running the app under uvicorn on a socket bound up front, so the URL printed is the one
listened on (`--port 0` picks a free port)."""

from __future__ import annotations

import logging
import socket

import uvicorn

from edgepick.errors import EdgepickError
from edgepick.serve.http.app import ServeState, create_app
from edgepick.serve.http.middleware import RequestIdFilter
from edgepick.serve.http.protocol import protocol_class
from edgepick.serve.settings import ServeSettings


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio only turns Nagle off (TCP_NODELAY) on sockets that say
    # they are TCP, and with Nagle on, a response written in two parts waits ~40 ms for an ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise EdgepickError(f"cannot listen on {host}:{port} ({exc.strerror})") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def server_config(app, s: ServeSettings) -> uvicorn.Config:
    """uvicorn as serve runs it: httptools' parser under edgepick's protocol (OpenAI-shaped
    refusals below the app, a header timeout: serve/http/protocol.py), no websocket protocol (an
    upgrade reaches the app, which refuses it)."""
    return uvicorn.Config(app, lifespan="on", access_log=False, log_level="warning",
                          http=protocol_class(s.header_timeout), ws="none",
                          timeout_graceful_shutdown=s.drain_timeout)


def run_server(state: ServeState) -> None:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s")
    for handler in logging.getLogger().handlers:  # every line names the request it is about
        handler.addFilter(RequestIdFilter())
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per engine request
    s = state.settings
    sock = bind(s.host, s.port)
    host, port = sock.getsockname()[:2]
    server = uvicorn.Server(server_config(create_app(state), s))

    def failed(exc: Exception) -> None:
        server.should_exit = True

    state.on_start_failed = failed
    shown = f"[{host}]" if ":" in host else host
    spec = state.pool.spec
    members = getattr(state.pool, "members", None)  # a team: every model, the default first
    served = ", ".join(members) if members else f"{spec.name}@{spec.version}"
    print(f"edgepick serve: http://{shown}:{port}/v1 ({served}, "
          f"{s.slots} slots, queue {s.queue}; /health, /metrics)", flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    if state.start_error is not None:
        raise EdgepickError(str(state.start_error))
