"""A model named where it lives → a `remote` ModelRef, its header read with range requests.

`https://host/path/model.gguf` (a URL whose path ends in .gguf; an OpenAI endpoint ends in /v1)
or `hf:ORG/REPO/FILE.gguf[@REVISION]`. A split GGUF (`-00001-of-0000N.gguf`) is read part by
part. `hf:ORG/REPO` names a repository: with one GGUF model in it that one is read; with
several, they are listed (quant type, size) and the user picks one — nothing is guessed.
HF_TOKEN goes with hub references only, and never past a redirect to another host.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from edgepick.errors import EdgepickError
from edgepick.models import hub
from edgepick.models.remote_header import Traffic, read_header
from edgepick.models.remote_http import client
from edgepick.records.model_ref import DEFAULT_ENGINE, ModelRef
from edgepick.records.remote import RemoteFile
from edgepick.units import human_bytes


def is_remote(spec: str) -> bool:
    """A hub reference, or an http(s) URL of a .gguf file (not an endpoint)."""
    if spec.startswith("hf:"):
        return True
    parts = urlsplit(spec)
    return (parts.scheme in ("http", "https") and not parts.fragment
            and parts.path.lower().endswith(".gguf"))


class PickOne(EdgepickError):
    """A repository holds several GGUF models: the message lists them, one per line."""

    def __init__(self, ref: hub.HubRef, choices: list[tuple[str, str, int]]) -> None:
        self.choices = choices
        lines = [f"{ref.spec()} holds {len(choices)} GGUF models; name one:"]
        lines += [f"  {ref.spec(path):<70} {quant:<8} {human_bytes(size):>10}"
                  for path, quant, size in choices]
        super().__init__("\n".join(lines))


def _hub_files(ref: hub.HubRef, http) -> tuple[str, list[tuple[str, str | None, str]]]:
    """(the reference as shown, [(URL, LFS SHA-256 or None, the part as shown)] per part)."""
    file = ref.file
    listed: dict[str, str | None] = {}
    if file is None:
        files = hub.list_files(http, ref)
        listed = {f.path: f.sha256 for f in files}
        choices = hub.gguf_choices(files)
        if not choices:
            raise EdgepickError(f"{ref.spec()}: no GGUF file in the repository at "
                                f"{ref.revision}")
        if len(choices) > 1:
            raise PickOne(ref, choices)
        file = choices[0][0]
    return ref.spec(file), [(hub.resolve_url(ref, name), listed.get(name), ref.spec(name))
                            for name in hub.split_names(file)]


def token_for(spec: str) -> str | None:
    """HF_TOKEN, for a hub reference or a URL on the hub's endpoint; no other host gets it."""
    return hub.token() if spec.startswith("hf:") or spec.startswith(hub.endpoint() + "/") \
        else None


def resolve_remote(spec: str, *, backend: str | None = None,
                   label: str | None = None) -> ModelRef:
    """Read the header of every part (from the cache when it holds them) into a ModelRef."""
    is_hub = spec.startswith("hf:")
    token = token_for(spec)
    traffic = Traffic()
    with client(token) as http:
        if is_hub:
            shown, urls = _hub_files(hub.parse(spec), http)
        else:
            path = urlsplit(spec).path
            names = hub.split_names(path)
            urls = [spec.replace(path, name, 1) for name in names]
            shown, urls = spec, [(url, None, url) for url in urls]
        parts = []
        for url, sha, part_shown in urls:
            part = read_header(http, url, part_shown, traffic, sha)
            if part.sha256 is None and part.etag and is_hub:
                part = part.model_copy(update={"sha256": hub.lfs_sha256(part.etag)})
            parts.append(part)
    remote = RemoteFile(ref=shown, parts=parts, requests=traffic.requests,
                        bytes_read=traffic.bytes_read)
    stem = unquote(urlsplit(parts[0].url).path.rsplit("/", 1)[-1]).removesuffix(".gguf")
    stem = hub.SPLIT.sub("", stem + ".gguf").removesuffix(".gguf")
    return ModelRef(kind="remote", spec=shown, backend=backend or DEFAULT_ENGINE,
                    label=label or stem, remote=remote)
