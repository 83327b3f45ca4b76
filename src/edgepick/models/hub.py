"""Hugging Face hub references: `hf:ORG/REPO/FILE.gguf[@REVISION]` and `hf:ORG/REPO[@REVISION]`.

The endpoint is `HF_ENDPOINT` (a mirror) or https://huggingface.co, the token `HF_TOKEN`. A
file is read at `{endpoint}/{repo}/resolve/{revision}/{file}`, which the hub answers with a
redirect to its CDN carrying the file's LFS SHA-256 as `X-Linked-Etag`; a repository's files
and their LFS SHA-256 come from `{endpoint}/api/models/{repo}/tree/{revision}?recursive=true`
(pages linked by `Link: <…>; rel="next"`), as huggingface_hub's `hf_hub_url` and
`list_repo_tree` use them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import quote

import httpx

from edgepick.errors import EdgepickError
from edgepick.models.remote_http import RemoteError, offline, status_error

DEFAULT_ENDPOINT = "https://huggingface.co"
SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$")
# llama.cpp's file type names as they appear in GGUF file names (Q4_K_M, IQ2_XS, BF16…)
QUANT_IN_NAME = re.compile(r"(?<![A-Za-z0-9])(I?Q\d(?:_[A-Z0-9]+)*|T?Q\d_\d|MXFP4(?:_MOE)?|"
                           r"BF16|FP?16|FP?32)(?![A-Za-z0-9])", re.IGNORECASE)
MAX_PAGES = 50


@dataclass(frozen=True)
class HubRef:
    repo: str
    file: str | None
    revision: str

    def spec(self, file: str | None = None) -> str:
        name = file or self.file
        rev = "" if self.revision == "main" else f"@{self.revision}"
        return f"hf:{self.repo}{'/' + name if name else ''}{rev}"


@dataclass(frozen=True)
class HubFile:
    path: str
    size: int
    sha256: str | None


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def token() -> str | None:
    return os.environ.get("HF_TOKEN") or None


def parse(spec: str) -> HubRef:
    """`hf:ORG/REPO[/PATH/FILE.gguf][@REVISION]`."""
    body, _, revision = spec.removeprefix("hf:").partition("@")
    parts = [p for p in body.split("/") if p]
    if len(parts) < 2 or (len(parts) > 2 and not parts[-1].endswith(".gguf")) or \
            any(p in (".", "..") for p in parts) or revision.count("/") > 4:
        raise EdgepickError(f"{spec}: expected hf:ORG/REPO/FILE.gguf (optionally @REVISION) "
                            "or hf:ORG/REPO to list its GGUF files")
    return HubRef(repo="/".join(parts[:2]), file="/".join(parts[2:]) or None,
                  revision=revision or "main")


def resolve_url(ref: HubRef, file: str) -> str:
    return (f"{endpoint()}/{quote(ref.repo)}/resolve/{quote(ref.revision, safe='')}/"
            f"{quote(file)}")


def lfs_sha256(etag: str | None) -> str | None:
    """The hub's X-Linked-Etag of an LFS file is its SHA-256 (quoted); a git blob's is not."""
    value = (etag or "").strip().removeprefix("W/").strip('"')
    return value.lower() if re.fullmatch(r"[0-9a-fA-F]{64}", value) else None


def list_files(http: httpx.Client, ref: HubRef) -> list[HubFile]:
    """Every file of the repository at the revision, with its LFS SHA-256 when it has one."""
    shown = ref.spec()
    if offline():
        raise RemoteError(f"{shown}: offline (EDGEPICK_OFFLINE or HF_HUB_OFFLINE is set); name "
                          "one file, hf:ORG/REPO/FILE.gguf, whose header is cached")
    url: str | None = (f"{endpoint()}/api/models/{quote(ref.repo)}/tree/"
                       f"{quote(ref.revision, safe='')}?recursive=true")
    out: list[HubFile] = []
    for _ in range(MAX_PAGES):
        if url is None:
            break
        try:
            r = http.get(url)
        except httpx.HTTPError as exc:
            raise RemoteError(f"{shown}: listing its files failed ({type(exc).__name__})") from None
        if r.status_code != 200:
            raise status_error(shown, r)
        try:
            entries = r.json()
            out += [HubFile(path=e["path"], size=int((e.get("lfs") or e).get("size", 0)),
                            sha256=(e.get("lfs") or {}).get("oid"))
                    for e in entries if e.get("type") == "file"]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise RemoteError(f"{shown}: the hub's file list is not the tree API's JSON") from None
        url = r.links.get("next", {}).get("url")
    return out


def gguf_choices(files: list[HubFile]) -> list[tuple[str, str, int]]:
    """(file to name, quant type from its name, bytes) per GGUF model, a split one once (its
    first part, its parts' sizes summed); mmproj projectors and imatrix files left out."""
    sizes: dict[str, int] = {}
    for f in files:
        name = f.path.rsplit("/", 1)[-1].lower()
        if not name.endswith(".gguf") or name.startswith(("mmproj", "imatrix")):
            continue
        m = SPLIT.search(f.path)
        first = f.path[:m.start()] + f"-00001-of-{m.group(2)}.gguf" if m else f.path
        sizes[first] = sizes.get(first, 0) + f.size
    out = []
    for path, size in sorted(sizes.items()):
        q = QUANT_IN_NAME.findall(path.rsplit("/", 1)[-1])
        quant = q[-1].upper().replace("FP", "F") if q else "?"
        out.append((path, quant, size))
    return out


def split_names(file: str) -> list[str]:
    """Every part of a split GGUF named by any one of them (one name for a whole file)."""
    m = SPLIT.search(file)
    if not m:
        return [file]
    count = int(m.group(2))
    if count < 1 or int(m.group(1)) > count:
        raise EdgepickError(f"{file}: part {m.group(1)} of {m.group(2)} is not a split GGUF's name")
    return [file[:m.start()] + f"-{i:05d}-of-{m.group(2)}.gguf" for i in range(1, count + 1)]
