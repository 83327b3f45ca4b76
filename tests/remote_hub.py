"""Local HTTP servers for remote model references: edgepick's file server (real range support,
models/file_server.py) with switches, and a stand-in hub for HF_ENDPOINT (`/{repo}/resolve/{rev}/{file}`
redirecting to a CDN on another port with X-Linked-Etag / X-Repo-Commit, and
`/api/models/{repo}/tree/{rev}`). Both bind to 127.0.0.1 on a free port and stop with the test.
Switches: ignore ranges (answer 200 with the whole file), cut an answer after N bytes, slow
down, demand a token."""

from __future__ import annotations

import hashlib
import json
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlsplit

from edgepick.models.file_server import FileServer, Seen, serving
from edgepick.models.file_server import file_server as serve_files

@dataclass
class SwitchedFiles(FileServer):
    """edgepick's file server with the switches a test needs."""

    ignore_ranges: bool = False
    cut_after: list[int] = field(default_factory=list)  # per body, in order: drop after N bytes
    block_delay: float = 0.0  # seconds between 64 KiB blocks: a slow link to kill a pull on
    demand_token: bool = False  # answer 401 to a request without an Authorization header
    cuts: dict[int, int | None] = field(default_factory=dict)

    def refuse(self, seen: Seen) -> int | None:
        return 401 if self.demand_token and not seen.authorization else None

    def ranged(self, seen: Seen) -> bool:
        return not self.ignore_ranges

    def go_on(self, seen: Seen) -> bool:
        if self.block_delay:
            time.sleep(self.block_delay)
        with self.lock:
            if id(seen) not in self.cuts:
                self.cuts[id(seen)] = self.cut_after.pop(0) if self.cut_after else None
            cut = self.cuts[id(seen)]
        return cut is None or seen.sent < cut


@contextmanager
def file_server(files: dict[str, Path]) -> Iterator[SwitchedFiles]:
    """Serve `files` (URL path → file) with range support; `.url` is the server's base URL."""
    with serve_files(SwitchedFiles(files=dict(files))) as state:
        yield state


@dataclass
class Hub:
    repos: dict[str, dict[str, Path]]  # "org/repo" → {path in the repo: file}
    token: str | None = None  # when set, resolve and tree answer 401 without this token
    commit: str = "0123456789abcdef0123456789abcdef01234567"
    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    cdn: SwitchedFiles | None = None
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
    with file_server(files) as cdn, serving(_hub_handler(hub)) as url:
        hub.cdn, hub.url = cdn, url
        yield hub
