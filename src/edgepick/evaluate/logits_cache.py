"""The reference model's scored log-probabilities, kept so that many candidates can be compared
with one reference without running the reference again (per-layer sensitivity compares ~30).

Layout: <cache>/fidelity/<key>/meta.json (the tokens and the reference's vocabulary fingerprint)
and one chunk_NNNN.npy (float32 log-probs, scored rows × n_vocab) + chunk_NNNN.npz (NLL of the
actual next token, argmax) per chunk. The key hashes the reference file's content, the text's
token source, the context length and the engine version, so nothing stale is ever reused.
Chunks are read memory-mapped: the OS page cache is the in-memory cache across calls.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

FORMAT = 1


def default_cache_dir() -> Path:
    root = Path(os.environ.get("EDGEPICK_CACHE", Path.home() / ".cache" / "edgepick"))
    return root / "fidelity"


class ReferenceStore:
    """Reference rows per chunk; `folder=None` keeps nothing (each call recomputes)."""

    def __init__(self, key: str, folder: Path | None):
        self.key = key
        self.dir = folder / key if folder is not None else None
        self._meta: dict | None = None

    @property
    def persistent(self) -> bool:
        return self.dir is not None

    # -- meta ------------------------------------------------------------------------------
    def meta(self) -> dict | None:
        if self._meta is None and self.dir is not None:
            path = self.dir / "meta.json"
            if path.is_file():
                try:
                    data = json.loads(path.read_text())
                except (OSError, ValueError):
                    data = None  # a torn write from a killed run: recompute
                if data and data.get("format") == FORMAT:
                    self._meta = data
        return self._meta

    def write_meta(self, meta: dict) -> None:
        meta = {**meta, "format": FORMAT}
        self._meta = meta
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)
            _atomic_write(self.dir / "meta.json", lambda fh: fh.write(json.dumps(meta).encode()))

    # -- chunks ----------------------------------------------------------------------------
    def _paths(self, i: int) -> tuple[Path, Path]:
        assert self.dir is not None
        return self.dir / f"chunk_{i:04d}.npy", self.dir / f"chunk_{i:04d}.npz"

    def has(self, i: int) -> bool:
        if self.dir is None:
            return False
        a, b = self._paths(i)
        return a.is_file() and b.is_file()

    def get(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b = self._paths(i)
        logp = np.load(a, mmap_mode="r")
        with np.load(b) as z:
            return logp, z["nll"], z["top"]

    def put(self, i: int, logp: np.ndarray, nll: np.ndarray, top: np.ndarray) -> None:
        if self.dir is None:
            return
        a, b = self._paths(i)
        # The .npz is written last: its presence means the .npy beside it is complete.
        _atomic_write(a, lambda fh: np.save(fh, logp))
        _atomic_write(b, lambda fh: np.savez(fh, nll=nll, top=top))

    def clear(self) -> None:
        if self.dir is not None and self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
        self._meta = None


def _atomic_write(path: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
