"""The delta on random version pairs written with `gguf`: every pair is rebuilt byte for byte,
a tensor that only moved or was renamed costs nothing, and a corrupt package or a wrong base is
refused with nothing written."""

from __future__ import annotations

import random
import tracemalloc

import pytest

from gguf_synth import mutate, random_model, write_gguf

from edgepick.errors import EdgepickError
from edgepick.update.apply import WrongBase, apply
from edgepick.update.diff import diff
from edgepick.update.manifest import build_manifest
from edgepick.update.package import CorruptPackage, read_index


@pytest.mark.parametrize("seed", range(24))
def test_random_pairs_rebuild_byte_for_byte(tmp_path, seed):
    rng = random.Random(seed)
    kv, tensors = random_model(rng)
    old = write_gguf(tmp_path / "old.gguf", kv, tensors, rng.choice([None, 64]))
    kv2, tensors2, align = mutate(rng, kv, tensors)
    new = write_gguf(tmp_path / "new.gguf", kv2, tensors2, align)
    r = diff(old, new, tmp_path / "u.epd")
    out = tmp_path / "rebuilt.gguf"
    apply(old, r.path, out)
    assert out.read_bytes() == new.read_bytes()
    assert r.size <= new.stat().st_size
    assert not list(tmp_path.glob("*.partial*"))


def test_moved_and_renamed_tensors_cost_nothing(tmp_path):
    rng = random.Random(7)
    kv, tensors = random_model(rng)
    old = write_gguf(tmp_path / "old.gguf", kv, tensors)
    moved = list(reversed(tensors))
    moved[0] = (moved[0][0] + ".new_name", moved[0][1], moved[0][2])
    new = write_gguf(tmp_path / "new.gguf", kv, moved, alignment=128)
    r = diff(old, new, tmp_path / "u.epd")
    assert r.shipped == 0 and r.referenced == len(tensors)
    kinds = {s.kind for s in r.index.segments}
    assert kinds <= {"blob", "kv", "tensor", "zeros"}
    tensor_data = sum(t[2].nbytes for t in tensors)
    assert r.size < tensor_data / 4  # the index and the changed header only
    apply(old, r.path, tmp_path / "rebuilt.gguf")
    assert (tmp_path / "rebuilt.gguf").read_bytes() == new.read_bytes()


def test_manifest_lists_every_tensor_with_its_hash(tmp_path):
    import hashlib

    rng = random.Random(3)
    kv, tensors = random_model(rng)
    path = write_gguf(tmp_path / "m.gguf", kv, tensors)
    m = build_manifest(path)
    data = path.read_bytes()
    assert [t.name for t in m.tensors] == [t[0] for t in tensors]
    assert m.sha256 == hashlib.sha256(data).hexdigest()
    assert m.metadata_sha256 == hashlib.sha256(data[:m.metadata_size]).hexdigest()
    for t in m.tensors:
        assert t.sha256 == hashlib.sha256(data[t.offset:t.offset + t.size]).hexdigest()
        assert t.offset % m.alignment == 0 and t.offset >= m.data_start
    assert {k.key for k in m.kv} >= set(kv)


@pytest.fixture()
def pair(tmp_path):
    rng = random.Random(11)
    kv, tensors = random_model(rng)
    old = write_gguf(tmp_path / "old.gguf", kv, tensors)
    kv2, tensors2, _ = mutate(random.Random(5), kv, tensors)
    tensors2[0] = (tensors2[0][0], "F32", tensors2[0][2] * 2)  # at least one tensor shipped
    new = write_gguf(tmp_path / "new.gguf", kv2, tensors2)
    return old, new, diff(old, new, tmp_path / "u.epd").path


@pytest.mark.parametrize("where", [0, 9, 40, -100, -33, -1])
def test_corrupt_package_is_refused_and_nothing_written(tmp_path, pair, where):
    old, _, pkg = pair
    data = bytearray(pkg.read_bytes())
    data[where] ^= 0x5A
    bad = tmp_path / "bad.epd"
    bad.write_bytes(bytes(data))
    out = tmp_path / "out.gguf"
    with pytest.raises(CorruptPackage) as exc:
        apply(old, bad, out)
    assert "\n" not in str(exc.value) and str(bad) in str(exc.value)
    assert not out.exists() and not list(tmp_path.glob("*.partial*"))


def test_cut_short_or_foreign_package_is_refused(tmp_path, pair):
    old, _, pkg = pair
    cut = tmp_path / "cut.epd"
    cut.write_bytes(pkg.read_bytes()[: pkg.stat().st_size // 2])
    foreign = tmp_path / "foreign.epd"
    foreign.write_bytes(old.read_bytes())
    for bad in (cut, foreign, tmp_path / "empty.epd"):
        bad.touch()
        with pytest.raises(EdgepickError):
            apply(old, bad, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()


def test_wrong_base_is_refused_and_nothing_written(tmp_path, pair):
    old, new, pkg = pair
    out = tmp_path / "out.gguf"
    with pytest.raises(WrongBase) as exc:
        apply(new, pkg, out)
    assert "refusing" in str(exc.value) and "\n" not in str(exc.value)
    assert not out.exists() and not list(tmp_path.glob("*.partial*"))
    assert read_index(pkg).base.sha256 == build_manifest(old).sha256


def test_apply_memory_stays_bounded(tmp_path):
    """A 48 MiB model whose every tensor changed: Python's peak allocation while applying stays
    a few MiB (the pieces are 1 MiB), under 16 MiB: a third of the model, two of its tensors."""
    import numpy as np

    big = [(f"blk.{i}.w", "F32", np.random.default_rng(i).standard_normal((1024, 2048)))
           for i in range(6)]  # 8 MiB each
    old = write_gguf(tmp_path / "old.gguf", {"a": 1}, big)
    new = write_gguf(tmp_path / "new.gguf", {"a": 2}, [(n, k, a + 1) for n, k, a in big])
    pkg = diff(old, new, tmp_path / "u.epd").path
    tracemalloc.start()
    try:
        apply(old, pkg, tmp_path / "out.gguf")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, peak
    assert (tmp_path / "out.gguf").read_bytes() == new.read_bytes()


def test_kill_9_during_apply_leaves_no_output_and_the_next_apply_cleans_up(tmp_path):
    """Killed at any moment, `update apply` leaves no NEW (only its own temporary file, which
    the next apply removes); the next apply writes NEW whole."""
    import signal
    import subprocess
    import sys
    import time

    import numpy as np

    big = [(f"blk.{i}.w", "F32", np.random.default_rng(i).standard_normal((512, 2048)))
           for i in range(8)]
    old = write_gguf(tmp_path / "old.gguf", {"a": 1}, big)
    new = write_gguf(tmp_path / "new.gguf", {"a": 2}, [(n, k, a * 3) for n, k, a in big])
    pkg = diff(old, new, tmp_path / "u.epd").path
    out = tmp_path / "out.gguf"
    argv = [sys.executable, "-m", "edgepick", "update", "apply", str(old), str(pkg), "-o",
            str(out)]
    for delay in (0.3, 0.6, 0.9, 1.2):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if out.exists():  # the rename happened before the kill: whole
            assert out.read_bytes() == new.read_bytes()
            out.unlink()
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == new.read_bytes()
    assert not list(tmp_path.glob("out.gguf.partial*"))


def test_f16_tensors_ship_as_byte_planes_across_pieces(tmp_path):
    """F16 weights over several 1 MiB pieces (the last one short) are stored as byte planes,
    alone or XORed with the old tensor, and come back exactly."""
    import numpy as np

    rng = np.random.default_rng(1)
    w = (rng.standard_normal((1300, 1024)) * 0.02).astype(np.float32)  # 2.5 MiB at F16
    moved = w.copy()
    moved[::7] += 0.001
    old = write_gguf(tmp_path / "old.gguf", {"a": 1}, [("w", "F16", w)])
    new = write_gguf(tmp_path / "new.gguf", {"a": 1}, [("w", "F16", moved),
                                                        ("fresh", "F16", w[:900] * 2)])
    r = diff(old, new, tmp_path / "u.epd")
    assert {b.shuffle for b in r.index.blobs} >= {2}
    apply(old, r.path, tmp_path / "out.gguf")
    assert (tmp_path / "out.gguf").read_bytes() == new.read_bytes()
