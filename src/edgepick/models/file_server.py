"""A local HTTP server for model files with range requests: a stand-in for a hub's CDN.

`edgepick models host` runs it so that a remote reference (`fit -m http://127.0.0.1:PORT/x.gguf`)
can be tried without a network, and the tests serve their files with it. It answers GET and HEAD
with one byte range (`bytes=A-B`, `bytes=A-`, `bytes=-N`) as RFC 9110 §14 says: 206 with
Content-Range, 416 past the end, 200 without a Range header; ETag and Last-Modified name the
file's version. It binds to 127.0.0.1 and records each request (path, range, status, bytes sent).
"""

from __future__ import annotations

import email.utils
import hashlib
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator
from urllib.parse import quote, unquote, urlsplit

BLOCK = 1 << 16
RANGE = re.compile(r"bytes=(\d*)-(\d*)")


@dataclass
class Seen:
    path: str
    range: str | None
    authorization: str | None
    status: int = 0
    sent: int = 0


@dataclass
class FileServer:
    """What is served (URL path without the leading / → file) and what was asked."""

    files: dict[str, Path]
    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def sent(self) -> int:
        return sum(s.sent for s in self.seen)

    def urls(self) -> list[str]:
        return [f"{self.url}/{quote(name)}" for name in self.files]

    def ranged(self, seen: Seen) -> bool:
        """Whether this answer honours the Range header (a subclass may refuse ranges)."""
        return True

    def refuse(self, seen: Seen) -> int | None:
        """A status to answer instead of the file (a subclass may demand a token); None serves."""
        return None

    def go_on(self, seen: Seen) -> bool:
        """Called after each block sent; False drops the connection there."""
        return True


def etag_of(path: Path) -> str:
    st = path.stat()
    return '"' + hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16] + '"'


def _span(asked: str | None, size: int) -> tuple[int, int] | None:
    """The inclusive byte span a Range header asks for; None: the whole file."""
    m = RANGE.fullmatch(asked or "")
    if not m or not (m.group(1) or m.group(2)):
        return None
    if not m.group(1):  # the last N bytes
        return max(0, size - int(m.group(2))), size - 1
    start = int(m.group(1))
    return start, min(int(m.group(2)), size - 1) if m.group(2) else size - 1


def send_file(h: BaseHTTPRequestHandler, state: FileServer, path: Path, seen: Seen,
              extra: dict | None = None) -> None:
    size = path.stat().st_size
    span = _span(seen.range, size) if state.ranged(seen) else None
    if span is not None and span[0] >= size:
        seen.status = 416
        h.send_response(416)
        h.send_header("Content-Range", f"bytes */{size}")
        h.send_header("Content-Length", "0")
        h.end_headers()
        return
    start, end = span or (0, size - 1)
    seen.status = 206 if span else 200
    h.send_response(seen.status)
    if span:
        h.send_header("Content-Range", f"bytes {start}-{end}/{size}")
    h.send_header("Content-Length", str(end - start + 1))
    h.send_header("Accept-Ranges", "bytes" if state.ranged(seen) else "none")
    h.send_header("ETag", etag_of(path))
    h.send_header("Last-Modified", email.utils.formatdate(path.stat().st_mtime, usegmt=True))
    for k, v in (extra or {}).items():
        h.send_header(k, v)
    h.end_headers()
    if h.command == "HEAD":
        return
    with open(path, "rb") as fh:
        fh.seek(start)
        left = end - start + 1
        while left > 0:
            block = fh.read(min(BLOCK, left))
            if not block:
                break
            try:
                h.wfile.write(block)
            except (BrokenPipeError, ConnectionResetError):  # the client closed: stop there
                return
            seen.sent += len(block)
            left -= len(block)
            if left and not state.go_on(seen):
                h.wfile.flush()
                h.close_connection = True
                h.connection.shutdown(2)
                return


def _handler(state: FileServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            seen = Seen(unquote(urlsplit(self.path).path), self.headers.get("Range"),
                        self.headers.get("Authorization"))
            with state.lock:
                state.seen.append(seen)
            path = state.files.get(seen.path.lstrip("/"))
            refused = state.refuse(seen)
            if refused or path is None or not path.is_file():
                seen.status = refused or 404
                self.send_response(seen.status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            send_file(self, state, path, seen)

        do_HEAD = do_GET

    return Handler


@contextmanager
def serving(handler, port: int = 0) -> Iterator[str]:
    """Run `handler` on 127.0.0.1:`port` (0: a free one) until the block ends; yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def file_server(files: dict[str, Path] | FileServer, port: int = 0) -> Iterator[FileServer]:
    """Serve `files` (URL path → file); `.url` is the server's base URL."""
    state = files if isinstance(files, FileServer) else FileServer(files=dict(files))
    with serving(_handler(state), port) as url:
        state.url = url
        yield state
