"""Local HTTP servers for remote model references: a file server with real range support
(206 with Content-Range, 416 past the end, ETag and Last-Modified) that records every request
and the bytes it sent, and a stand-in hub for HF_ENDPOINT (`/{repo}/resolve/{rev}/{file}`
redirecting to a CDN on another port with X-Linked-Etag / X-Repo-Commit, and
`/api/models/{repo}/tree/{rev}`). Both bind to 127.0.0.1 on a free port and stop with the test.
Switches: ignore ranges (answer 200 with the whole file), cut an answer after N bytes, demand
a token."""

from __future__ import annotations

import email.utils
import hashlib
import json
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlsplit

BLOCK = 1 << 16


@dataclass
class Seen:
    path: str
    range: str | None
    authorization: str | None
    status: int = 0
    sent: int = 0


@dataclass
class FileServer:
    files: dict[str, Path]  # URL path (without the leading /) → file
    url: str = ""
    ignore_ranges: bool = False
    cut_after: list[int] = field(default_factory=list)  # per body, in order: drop after N bytes
    block_delay: float = 0.0  # seconds between 64 KiB blocks: a slow link to kill a pull on
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def sent(self) -> int:
        return sum(s.sent for s in self.seen)


def etag_of(path: Path) -> str:
    st = path.stat()
    return '"' + hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16] + '"'


def _send_file(h: BaseHTTPRequestHandler, state: FileServer, path: Path, seen: Seen,
               extra: dict | None = None) -> None:
    size = path.stat().st_size
    start, end = 0, size - 1
    m = re.fullmatch(r"bytes=(\d+)-(\d*)", seen.range or "")
    ranged = bool(m) and not state.ignore_ranges
    if ranged:
        start = int(m.group(1))
        end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
        if start >= size:
            seen.status = 416
            h.send_response(416)
            h.send_header("Content-Range", f"bytes */{size}")
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
    seen.status = 206 if ranged else 200
    h.send_response(seen.status)
    if ranged:
        h.send_header("Content-Range", f"bytes {start}-{end}/{size}")
    h.send_header("Content-Length", str(end - start + 1))
    h.send_header("Accept-Ranges", "none" if state.ignore_ranges else "bytes")
    h.send_header("ETag", etag_of(path))
    h.send_header("Last-Modified", email.utils.formatdate(path.stat().st_mtime, usegmt=True))
    for k, v in (extra or {}).items():
        h.send_header(k, v)
    h.end_headers()
    with state.lock:
        cut = state.cut_after.pop(0) if state.cut_after else None
    with open(path, "rb") as fh:
        fh.seek(start)
        left = end - start + 1
        while left > 0:
            block = fh.read(min(BLOCK, left, cut - seen.sent if cut is not None else BLOCK))
            if not block:
                break
            try:
                h.wfile.write(block)
            except (BrokenPipeError, ConnectionResetError):  # the client closed: stop there
                return
            seen.sent += len(block)
            left -= len(block)
            if state.block_delay:
                time.sleep(state.block_delay)
            if cut is not None and seen.sent >= cut:
                h.wfile.flush()
                h.close_connection = True
                h.connection.shutdown(2)
                return


def _files_handler(state: FileServer):
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
            if path is None or not path.is_file():
                seen.status = 404
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            _send_file(self, state, path, seen)

    return Handler


@contextmanager
def _serve(handler) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def file_server(files: dict[str, Path]) -> Iterator[FileServer]:
    """Serve `files` (URL path → file) with range support; `.url` is the server's base URL."""
    state = FileServer(files=files)
    with _serve(_files_handler(state)) as url:
        state.url = url
        yield state


@dataclass
class Hub:
    repos: dict[str, dict[str, Path]]  # "org/repo" → {path in the repo: file}
    token: str | None = None  # when set, resolve and tree answer 401 without this token
    commit: str = "0123456789abcdef0123456789abcdef01234567"
    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    cdn: FileServer | None = None
    sha: dict[Path, str] = field(default_factory=dict)

    def sha256(self, path: Path) -> str:
        if path not in self.sha:
            with open(path, "rb") as fh:
                self.sha[path] = hashlib.file_digest(fh, "sha256").hexdigest()
        return self.sha[path]


def _hub_handler(hub: Hub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _reply(self, code: int, body: bytes = b"", headers: dict | None = None) -> None:
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            path = unquote(parts.path)
            seen = Seen(path, self.headers.get("Range"), self.headers.get("Authorization"))
            hub.seen.append(seen)
            if hub.token and seen.authorization != f"Bearer {hub.token}":
                seen.status = 401
                return self._reply(401, b'{"error":"Invalid credentials"}',
                                   {"Content-Type": "application/json"})
            m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)", path)
            if m and m.group(1) in hub.repos:
                entries = [{"type": "file", "path": name, "size": f.stat().st_size,
                            "oid": hashlib.sha1(name.encode()).hexdigest(),
                            "lfs": {"oid": hub.sha256(f), "size": f.stat().st_size,
                                    "pointerSize": 134}}
                           for name, f in sorted(hub.repos[m.group(1)].items())]
                seen.status = 200
                return self._reply(200, json.dumps(entries).encode(),
                                   {"Content-Type": "application/json"})
            m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
            f = hub.repos.get(m.group(1), {}).get(m.group(3)) if m else None
            if f is None:
                seen.status = 404
                return self._reply(404, b"Entry not found", {"X-Error-Code": "EntryNotFound"})
            seen.status = 302
            return self._reply(302, b"", {
                "Location": f"{hub.cdn.url}/{m.group(1)}/{m.group(3)}",
                "X-Linked-Etag": f'"{hub.sha256(f)}"', "X-Linked-Size": str(f.stat().st_size),
                "X-Repo-Commit": hub.commit, "ETag": '"git-blob-oid"'})

    return Handler


@contextmanager
def stand_in_hub(repos: dict[str, dict[str, Path]], token: str | None = None) -> Iterator[Hub]:
    """A hub at `.url` (set HF_ENDPOINT to it) whose files live on a CDN at another port
    (`.cdn`, a FileServer that records whether a token reached it)."""
    hub = Hub(repos=repos, token=token)
    files = {f"{repo}/{name}": f for repo, names in repos.items() for name, f in names.items()}
    with file_server(files) as cdn, _serve(_hub_handler(hub)) as url:
        hub.cdn, hub.url = cdn, url
        yield hub
