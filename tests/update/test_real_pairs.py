"""The "Done when" pairs, built from the bundled SmolLM2 cut to 2 blocks (tests/update_pairs.py):
each package rebuilds the new file byte for byte and is smaller than it; a template-only change
ships under 1 MiB and every tensor by reference; the `update` CLI does the same in one line."""

from __future__ import annotations

import pytest

from update_pairs import build_pairs

from edgepick.update.apply import apply
from edgepick.update.diff import diff


@pytest.fixture(scope="session")
def pairs(tiny_model):
    from parts import need_tool

    from edgepick.assets.bundled import cache_dir

    need_tool("llama-quantize")  # built once into the cache, reused by later sessions
    return build_pairs(tiny_model, cache_dir() / "update-pairs-tiny2", last_block=1)


def test_every_pair_rebuilds_byte_for_byte(pairs, tmp_path):
    for label, old, new in pairs:
        r = diff(old, new, tmp_path / "u.epd")
        out = tmp_path / "rebuilt.gguf"
        apply(old, r.path, out)
        assert out.read_bytes() == new.read_bytes(), label
        assert r.size < new.stat().st_size, label
        if label == "chat template only":
            assert r.size < 2**20 and r.shipped == 0, (label, r.size, r.shipped)
        if label == "fine-tune of 2 blocks":  # the embeddings and the norms outside the blocks
            assert r.referenced >= 2 and r.size < new.stat().st_size * 0.75, (label, r.size)
        out.unlink()


def test_update_cli_diff_apply_manifest(cli, pairs, tmp_path):
    import json

    _, old, new = pairs[1]
    pkg = tmp_path / "u.epd"
    out = cli("update", "diff", str(old), str(new), "-o", str(pkg))
    assert out.returncode == 0, out.stderr
    assert "referenced from the base" in " ".join(out.stdout.split())  # rich wraps at the path
    again = cli("update", "diff", str(old), str(new), "-o", str(pkg))
    assert again.returncode == 2 and "--force" in again.stderr
    out = cli("update", "apply", str(old), str(pkg), "-o", str(tmp_path / "new.gguf"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "new.gguf").read_bytes() == new.read_bytes()
    wrong = cli("update", "apply", str(new), str(pkg), "-o", str(tmp_path / "x.gguf"))
    assert wrong.returncode == 2 and "refusing it, nothing was written" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.gguf").exists()
    m = cli("update", "manifest", str(new), "--json")
    assert m.returncode == 0, m.stderr
    data = json.loads(m.stdout)
    embd = next(t for t in data["tensors"] if t["name"] == "token_embd.weight")
    assert embd["type"] == "F16" and len(embd["sha256"]) == 64 and data["metadata_sha256"]
