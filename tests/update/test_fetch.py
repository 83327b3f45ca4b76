"""`--from URL`: a package fetched from a local HTTP server, resumed with range requests after
the connection drops, verified before use; a server that ignores ranges starts over; a bad
download is refused and deleted."""

from __future__ import annotations

import random

import pytest

from range_server import serve_file
from gguf_synth import mutate, random_model, write_gguf

from edgepick.errors import EdgepickError
from edgepick.update.fetch import fetch


@pytest.fixture()
def pkg(tmp_path):
    from edgepick.update.diff import diff

    rng = random.Random(2)
    kv, tensors = random_model(rng)
    old = write_gguf(tmp_path / "old.gguf", kv, tensors)
    kv2, tensors2, _ = mutate(rng, kv, tensors)
    tensors2[0] = (tensors2[0][0], "F32", tensors2[0][2] + 3)
    new = write_gguf(tmp_path / "new.gguf", kv2, tensors2)
    return old, new, diff(old, new, tmp_path / "u.epd").path


def test_fetch_resumes_after_dropped_connections(tmp_path, pkg):
    _, _, path = pkg
    size = path.stat().st_size
    with serve_file(path) as (url, srv):
        srv.cut_after = [size // 3, size // 3]  # two answers cut short, then the rest
        got = fetch(url, tmp_path / "dl.epd")
    assert got.read_bytes() == path.read_bytes()
    assert srv.ranges[0] is None and srv.ranges[1] == f"bytes={size // 3}-"
    assert srv.ranges[2] == f"bytes={2 * (size // 3)}-"


def test_cli_apply_from_url(cli, tmp_path, pkg):
    old, new, path = pkg
    with serve_file(path) as (url, srv):
        srv.cut_after = [100]
        out = cli("update", "apply", str(old), "--from", url, "-o", str(tmp_path / "r.gguf"),
                  env={"EDGEPICK_CACHE": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "r.gguf").read_bytes() == new.read_bytes()
    assert srv.ranges[1] == "bytes=100-"


def test_server_without_ranges_starts_over(tmp_path, pkg):
    _, _, path = pkg
    with serve_file(path) as (url, srv):
        srv.ignore_ranges = True
        srv.cut_after = [50]
        got = fetch(url, tmp_path / "dl.epd")
    assert got.read_bytes() == path.read_bytes()


def test_bad_download_is_refused_and_deleted(tmp_path, pkg):
    old, _, path = pkg
    with serve_file(old) as (url, _):  # a GGUF, not a package
        with pytest.raises(EdgepickError) as exc:
            fetch(url, tmp_path / "dl.epd")
    assert "not an edgepick update package" in str(exc.value)
    assert not list(tmp_path.glob("dl.epd*"))
    with serve_file(path) as (url, _):
        with pytest.raises(EdgepickError) as exc:
            fetch(url, tmp_path / "dl.epd", sha256="0" * 64)
    assert "SHA-256" in str(exc.value) and not list(tmp_path.glob("dl.epd*"))
