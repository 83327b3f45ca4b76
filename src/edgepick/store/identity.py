"""Content identity of a model: a file's SHA-256 (cached per size and mtime), or a URL."""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache


def model_identity(model: str) -> str:
    if "://" in model:
        return model
    if os.path.isdir(model):  # an engine's model folder (onnxruntime-genai): all its files
        digest = hashlib.sha256()
        for name in sorted(os.listdir(model)):
            if os.path.isfile(os.path.join(model, name)):
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
