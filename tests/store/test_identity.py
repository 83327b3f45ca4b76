"""Content identity and keys live in the store (store/identity.py), not in the records, and are
byte for byte the keys `ModelRef.identity()` and `Candidate.content_key()` made before the move:
stored rows are found by them. The expected keys below were computed by those methods."""

from __future__ import annotations

from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.model_ref import ModelRef
from edgepick.store.identity import content_key, ref_identity


def test_keys_are_the_ones_the_records_made_before(tmp_path):
    f = tmp_path / "f.gguf"
    f.write_bytes(b"edgepick identity test\n")
    folder = tmp_path / "fold"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"a")
    (folder / "genai_config.json").write_bytes(b"{}")
    settings = RuntimeSettings(threads=1)

    c = Candidate(ref=ModelRef.file(f), settings=settings)
    assert ref_identity(c.ref) == \
        "b2b031e1b322c16aef79497e31eefadea1a904e826a354034fb438cd7ed5ecf5"
    assert content_key(c, {"n": 1}) == "8f914b74a9b9c1c17d14a839dd856a2f"
    assert content_key(c) == "bfb97a65b29f41dff7f09c98af44faaa"

    e = Candidate(ref=ModelRef.endpoint("http://127.0.0.1:9/v1#m"))
    assert ref_identity(e.ref) == "http://127.0.0.1:9/v1#m"
    assert content_key(e) == "8e6d37f05e25275eb0002f8c2058d6bd"

    onnx = Candidate(ref=ModelRef.file(folder, backend="onnx_genai"))  # a folder: all its files
    assert ref_identity(onnx.ref) == \
        "6c16264f8a2b175e922e8a99817d3c4f255644b277d2b633103174a01bf662bc"
    assert content_key(onnx, settings) == "8e91c8ff7ccb7b4446c4da03b9c9962a"  # a record as extra
