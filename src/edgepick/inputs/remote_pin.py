"""A remote reference in a plan, resolved once and pinned beside the run's output.

The first run reads the header (remote.py) and writes `<output>/remote/<id>.json` (the parts:
URL, size, ETag, SHA-256) and `<id>.<n>.header` (each part's header bytes). Every later run of
the plan reads the pin: no request, whatever the cache holds (a stand-in the cache lost is
written again from the pinned bytes), so the run reproduces offline with the same identity and
the same figures. Deleting the pin resolves the reference again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from edgepick.errors import EdgepickError
from edgepick.inputs.remote import resolve_remote
from edgepick.models.remote_header import restore
from edgepick.records.model_ref import ModelRef
from edgepick.records.remote import RemoteFile


def _pin(folder: Path, spec: str) -> Path:
    return folder / f"{hashlib.sha256(spec.encode()).hexdigest()[:16]}.json"


def resolve_pinned(spec: str, folder: Path, *, backend: str | None = None,
                   label: str | None = None) -> ModelRef:
    pin = _pin(folder, spec)
    if pin.is_file():
        try:
            ref = ModelRef.model_validate_json(pin.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise EdgepickError(f"{pin}: unreadable pin of {spec} ({str(exc).splitlines()[0]}); "
                                "delete it to resolve the reference again") from None
        parts = []
        for i, part in enumerate(ref.remote.parts):
            header = pin.with_name(f"{pin.stem}.{i}.header")
            if not header.is_file():
                raise EdgepickError(f"{header}: missing; delete {pin} to resolve {spec} again")
            parts.append(restore(part, header.read_bytes()))
        remote = RemoteFile(ref=ref.remote.ref, parts=parts)
        return ref.model_copy(update={"remote": remote,
                                      "backend": backend or ref.backend,
                                      "label": label or ref.label})
    ref = resolve_remote(spec, backend=backend, label=label)
    folder.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(ref.remote.parts):
        with open(part.header, "rb") as fh:
            pin.with_name(f"{pin.stem}.{i}.header").write_bytes(fh.read(part.header_bytes))
    tmp = pin.with_name(pin.name + ".tmp")
    tmp.write_text(ref.model_dump_json(indent=2), encoding="utf-8")
    tmp.replace(pin)  # last: a pin is whole or absent
    return ref
