"""A local HTTP server for one file, with range requests (206 / Content-Range, 416 past the
end) and, for resume tests, a switch that drops the connection after N bytes of an answer."""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator


class RangeFiles:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.cut_after: list[int] = []  # per answer, in order: drop after this many bytes
        self.ranges: list[str | None] = []  # the Range header of each request
        self.ignore_ranges = False


def _handler(state: RangeFiles):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            data = state.path.read_bytes()
            asked = self.headers.get("Range")
            state.ranges.append(asked)
            start = 0
            m = re.fullmatch(r"bytes=(\d+)-", asked or "")
            if m and not state.ignore_ranges:
                start = int(m.group(1))
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start:]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            cut = state.cut_after.pop(0) if state.cut_after else None
            if cut is not None:
                self.wfile.write(body[:cut])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(body)

    return Handler


@contextmanager
def serve_file(path: Path) -> Iterator[tuple[str, RangeFiles]]:
    state = RangeFiles(path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{path.name}", state
    finally:
        server.shutdown()
        server.server_close()
