"""Content identity of a model (a file's SHA-256, cached per size and mtime, or a URL) and the
content key a candidate's rows are stored under. Hashing reads files, so it lives here with the
store rather than in the records, which hold data only. The keys are those the
records' own methods made before the move, byte for byte: stored rows are found by them
(tests/store/test_identity.py)."""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache

from pydantic import BaseModel

from edgepick.records.candidate import Candidate
from edgepick.records.model_ref import ModelRef


def ref_identity(ref: ModelRef) -> str:
    """The model's content identity: its file's (or folder's) SHA-256, the endpoint locator, or
    a remote file's (its LFS SHA-256, else its URL and ETag: the stand-in's bytes are not it)."""
    if ref.remote is not None:
        return ref.remote.identity
    return model_identity(ref.locator)


def content_key(candidate: Candidate, *extra: object) -> str:
    """Hash of the model's content identity, the engine, the settings and whatever else is
    named (a workload, say)."""
    payload = {
        "model": ref_identity(candidate.ref),
        "backend": candidate.backend,
        "settings": candidate.settings.key_dict(),
        "extra": [e.model_dump() if isinstance(e, BaseModel) else e for e in extra],
    }
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


# edgepick's own record beside a converted folder's files (convert/recipe.py): how and where it
# was built, with the build's timings. It is not the model: the same recipe rebuilt (on another
# machine, in another folder) writes the same model files and another record.
BUILD_RECORD = "edgepick_convert.json"


def model_identity(model: str) -> str:
    if "://" in model:
        return model
    if os.path.isdir(model):  # an engine's model folder (onnxruntime-genai): its model files
        digest = hashlib.sha256()
        for name in sorted(os.listdir(model)):
            if name != BUILD_RECORD and os.path.isfile(os.path.join(model, name)):
                digest.update(f"{name}\0{file_sha256(os.path.join(model, name))}\0".encode())
        return digest.hexdigest()
    st = os.stat(model)
    return _sha256(os.path.realpath(model), st.st_size, st.st_mtime_ns)


def file_sha256(path: str) -> str:
    st = os.stat(path)
    return _sha256(os.path.realpath(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=256)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()
