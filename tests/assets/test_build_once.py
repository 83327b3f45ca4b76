"""Cached files are built once however many processes ask at once (pytest's workers, a plan's
jobs), and never read half-written: edgepick.assets.bundled.build_once."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from edgepick.assets.bundled import build_once


def _slow_build(target: str, log: str) -> str:
    def build(part: Path) -> None:
        with open(log, "a") as fh:
            fh.write("built\n")
        part.write_text("half")
        time.sleep(0.5)  # a reader that did not wait would see "half"
        part.write_text("whole")

    path = build_once(Path(target), build)
    return path.read_text()


def test_processes_asking_at_once_build_once_and_all_read_it_whole(tmp_path):
    target, log = tmp_path / "m.gguf", tmp_path / "log"
    with multiprocessing.get_context("fork").Pool(3) as pool:
        texts = pool.starmap(_slow_build, [(str(target), str(log))] * 3)
    assert texts == ["whole"] * 3
    assert log.read_text() == "built\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log", "m.gguf", "m.gguf.lock"]


def test_a_failed_or_killed_build_leaves_nothing_that_looks_built(tmp_path):
    target = tmp_path / "conv"

    def broken(part: Path) -> None:
        part.mkdir()
        (part / "model.onnx").write_text("partial")
        raise RuntimeError("converter died")

    with pytest.raises(RuntimeError):
        build_once(target, broken)
    assert not target.exists() and not (tmp_path / ".part-conv").exists()
    # a build killed midway (no finally ran) leaves its part behind: the next build discards it
    (tmp_path / ".part-conv").mkdir()
    (tmp_path / ".part-conv" / "stale").write_text("x")

    def good(part: Path) -> None:
        part.mkdir()
        (part / "model.onnx").write_text("whole")

    assert build_once(target, good) == target
    assert [p.name for p in target.iterdir()] == ["model.onnx"]
    assert build_once(target, broken) == target  # built: not built again
