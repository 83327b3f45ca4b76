"""HTTP for files that live on a server: bounded range reads, each failure in one line.

Every request has bounded timeouts and at most `ATTEMPTS` tries (a dropped connection, a
timeout, 429 or a 5xx is tried again after a short wait). Redirects are followed (a hub answers
a file's URL with a redirect to its CDN) up to `MAX_REDIRECTS`; httpx drops the Authorization
header when a redirect leaves the origin (`Client._redirect_headers`), so a token is never sent
to the CDN's host. A range request answered 200 means the server ignores ranges: the answer is
closed before its body is read, so nothing is downloaded that was not asked for (RFC 9110
§14.2: a server that supports ranges answers 206 with Content-Range).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

import httpx

from edgepick import __version__
from edgepick.errors import EdgepickError

TIMEOUT = httpx.Timeout(30.0, connect=10.0)
ATTEMPTS = 3
MAX_REDIRECTS = 5
CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


class RemoteError(EdgepickError):
    """A remote file could not be read; the message names it and what the server said."""


@dataclass(frozen=True)
class RangeAnswer:
    data: bytes
    size: int  # the whole file's size
    etag: str | None
    last_modified: str | None
    commit: str | None  # the hub's X-Repo-Commit: the revision the file was served from
    url: str  # after redirects


def client(token: str | None = None) -> httpx.Client:
    """A client for one resolution: the token goes to the host it was meant for only."""
    headers = {"User-Agent": f"edgepick/{__version__}"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(headers=headers, timeout=TIMEOUT, follow_redirects=True,
                        max_redirects=MAX_REDIRECTS)


def offline() -> bool:
    """EDGEPICK_OFFLINE=1 (or the hub's own HF_HUB_OFFLINE=1): no request at all."""
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes")
               for v in ("EDGEPICK_OFFLINE", "HF_HUB_OFFLINE"))


def status_error(shown: str, r: httpx.Response) -> RemoteError:
    """One line for an answer that is not the file."""
    code = r.status_code
    if r.history and _origin(r.url) != _origin(r.history[0].url) and code in (401, 403):
        return RemoteError(f"{shown}: HTTP {code} from {r.url.netloc.decode()}, where the server "
                           "redirected (a token is never sent past a redirect to another host)")
    if code == 401:
        why = ("the token in HF_TOKEN was refused" if "authorization" in r.request.headers
               else "it needs a token (set HF_TOKEN)")
        return RemoteError(f"{shown}: HTTP 401 unauthorized: {why}")
    if code == 403:
        return RemoteError(f"{shown}: HTTP 403 forbidden (a gated or private repository: accept "
                           "its terms on the hub, and set HF_TOKEN)")
    if code == 404:
        return RemoteError(f"{shown}: HTTP 404: no such file (check the repository, the file "
                           "name and the revision)")
    return RemoteError(f"{shown}: HTTP {code} {r.reason_phrase}".rstrip())


def _origin(url: httpx.URL) -> tuple:
    return url.scheme, url.host, url.port


def _retryable(code: int) -> bool:
    return code == 429 or code >= 500


def _linked(r: httpx.Response, name: str) -> str | None:
    """A header of the answer or of the redirect that led to it (the hub sets X-Linked-Etag
    and X-Repo-Commit on its redirect to the CDN, huggingface_hub's file_download.py)."""
    for hop in (*r.history, r):
        if name in hop.headers:
            return hop.headers[name]
    return None


def get_range(http: httpx.Client, url: str, start: int, end: int, shown: str) -> RangeAnswer:
    """Bytes `start`..`end` (inclusive) of `url`; fewer when the file ends first."""
    if offline():
        raise RemoteError(f"{shown}: offline (EDGEPICK_OFFLINE or HF_HUB_OFFLINE is set) and "
                          "its header is not cached")
    last = ""
    for attempt in range(ATTEMPTS):
        if attempt:
            time.sleep(min(0.5 * 2 ** attempt, 4.0))
        try:
            with http.stream("GET", url, headers={"Range": f"bytes={start}-{end}"}) as r:
                if _retryable(r.status_code):
                    last = f"HTTP {r.status_code}"
                    continue
                return _answer(r, start, end, shown)
        except httpx.TooManyRedirects:
            raise RemoteError(f"{shown}: more than {MAX_REDIRECTS} redirects") from None
        except httpx.UnsupportedProtocol as exc:
            raise RemoteError(f"{shown}: {exc}") from None
        except (httpx.TransportError, httpx.StreamError) as exc:
            last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    raise RemoteError(f"{shown}: no answer after {ATTEMPTS} tries ({last})")


def _answer(r: httpx.Response, start: int, end: int, shown: str) -> RangeAnswer:
    etag = _linked(r, "x-linked-etag") or r.headers.get("etag")
    meta = dict(etag=etag.strip() if etag else None, last_modified=r.headers.get("last-modified"),
                commit=_linked(r, "x-repo-commit"), url=str(r.url))
    if r.status_code == 416:  # the range starts past the end: the file is shorter
        m = re.fullmatch(r"bytes \*/(\d+)", r.headers.get("content-range", ""))
        return RangeAnswer(data=b"", size=int(m.group(1)) if m else start, **meta)
    if r.status_code == 206:
        m = CONTENT_RANGE.fullmatch(r.headers.get("content-range", ""))
        if not m or int(m.group(1)) != start or m.group(3) == "*":
            raise RemoteError(f"{shown}: the server answered range {start}-{end} with "
                              f"'{r.headers.get('content-range')}'")
        return RangeAnswer(data=_body(r, end - start + 1, shown), size=int(m.group(3)), **meta)
    if r.status_code == 200:
        length = r.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) <= end - start + 1 \
                and start == 0:  # the whole file is no more than what was asked for
            return RangeAnswer(data=_body(r, int(length), shown), size=int(length), **meta)
        whole = f" {int(length):,}-byte" if length and length.isdigit() else ""
        raise RemoteError(f"{shown}: the server ignores range requests (it answered 200 with "
                          f"the whole{whole} file); refused before reading it: `edgepick models "
                          "pull` downloads whole files")
    raise status_error(shown, r)


def _body(r: httpx.Response, limit: int, shown: str) -> bytes:
    """The answer's bytes, never more than `limit` (a server that sends more is cut off)."""
    out = bytearray()
    for block in r.iter_bytes():
        out += block
        if len(out) > limit:
            raise RemoteError(f"{shown}: the server sent more than the {limit} bytes asked for")
    return bytes(out)
