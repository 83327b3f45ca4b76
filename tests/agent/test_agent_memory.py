"""The agent's memory: the long-term cap holds under 10,000 insertions; recall; real embeddings."""

from __future__ import annotations

import sqlite3
import zlib

import numpy as np
import pytest

from edgepick.agent.memory import LongTermMemory, Memory
from edgepick.errors import EdgepickError

DIM = 64


class FakeEmbedder:
    """Deterministic vectors from the text's CRC: fast, and equal texts get equal vectors."""

    def embed(self, texts):
        rows = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIM) for t in texts]
        m = np.array(rows, dtype=np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def true_totals(path) -> tuple[int, int]:
    with sqlite3.connect(path) as db:
        n, b = db.execute("SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM summaries").fetchone()
    return n, b


@pytest.mark.parametrize("max_entries, max_bytes", [(50, 1 << 20), (10_000, 20_000)])
def test_caps_hold_under_10000_insertions(tmp_path, max_entries, max_bytes):
    path = tmp_path / "memory.sqlite"
    emb = FakeEmbedder()
    mem = LongTermMemory(path, emb, max_entries=max_entries, max_bytes=max_bytes)
    for i in range(10_000):
        text = f"summary {i}: " + "x" * (i % 37)
        mem.add(text, emb.embed([text])[0])
        s = mem.stats()
        assert s["entries"] <= max_entries and s["bytes"] <= max_bytes
        if i % 2500 == 0:
            assert true_totals(path) == (s["entries"], s["bytes"])  # the running totals are true
    assert true_totals(path) == (mem.stats()["entries"], mem.stats()["bytes"])
    newest = mem.recall("summary 9999: " + "x" * (9999 % 37), k=1)
    assert newest[0][0].startswith("summary 9999") and newest[0][1] == pytest.approx(1.0)
    assert not any(t.startswith("summary 0:") for t, _ in mem.recall("summary 0: ", k=50))
    mem.close()
    # The file itself stays small: freed pages are reused, not appended.
    assert path.stat().st_size < 3 * max(max_bytes, max_entries * 400) + (64 << 10)


def test_an_entry_larger_than_the_cap_is_refused(tmp_path):
    mem = LongTermMemory(tmp_path / "m.sqlite", FakeEmbedder(), max_bytes=300)
    with pytest.raises(EdgepickError, match="exceeds the cap"):
        mem.add("y" * 100)  # 100 bytes of text + 256 of vector
    assert mem.stats()["entries"] == 0


def test_recall_ranks_by_cosine_and_returns_plain_pairs(tmp_path):
    mem = LongTermMemory(tmp_path / "m.sqlite", FakeEmbedder())
    for t in ("the user likes tea", "the wifi password is in notes.txt", "meeting on friday"):
        mem.add(t)
    got = mem.recall("meeting on friday", k=2)
    assert isinstance(got[0], tuple) and got[0][0] == "meeting on friday"
    assert got[0][1] > got[1][1] and len(got) == 2


def test_short_term_turns_spill_into_long_term_summaries(tmp_path):
    lt = LongTermMemory(tmp_path / "m.sqlite", FakeEmbedder())
    mem = Memory(lt, recent_turns=2, summarise=lambda u, a: f"asked {u}, told {a}")
    for i in range(4):
        mem.add_turn(f"q{i}", f"a{i}")
    assert [m["content"] for m in mem.history()] == ["q2", "a2", "q3", "a3"]
    assert lt.stats()["entries"] == 2
    assert mem.recall("asked q0, told a0", k=1)[0][0] == "asked q0, told a0"


def test_not_a_database_is_one_line(tmp_path):
    bad = tmp_path / "m.sqlite"
    bad.write_text("not sqlite at all" * 100)
    with pytest.raises(EdgepickError, match="not a usable memory database"):
        LongTermMemory(bad, FakeEmbedder())


def test_real_embeddings_from_the_edge_model(tmp_path, tiny_model):
    from edgepick.agent.embedding import GGUFEmbedder

    emb = GGUFEmbedder(tiny_model, n_ctx=128)
    try:
        vecs = emb.embed(["the cat sat on the mat", "quarterly budget review"])
        assert vecs.shape == (2, 576) and np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-4)
        mem = LongTermMemory(tmp_path / "m.sqlite", emb, max_entries=2)
        for t in ("the cat sat on the mat", "quarterly budget review", "wifi password hunter2"):
            mem.add(t)
        assert mem.stats()["entries"] == 2
        top = mem.recall("quarterly budget review", k=2)
        assert top[0][0] == "quarterly budget review" and top[0][1] == pytest.approx(1, abs=1e-4)
        mem.close()
    finally:
        emb.close()
