"""Depth pruning writes a GGUF without some blocks: renumbered, per-layer metadata sliced, the
rest copied byte for byte; a model that cannot lose a block is refused and nothing is written."""

from __future__ import annotations

import pytest
from gguf_synth import block_model

from edgepick.errors import EdgepickError
from edgepick.models.depth import without_blocks
from edgepick.models.gguf_fast_reader import fast_reader
from edgepick.models.gguf_info import gguf_spec
from edgepick.prune.build import build, parse_blocks, provenance
from edgepick.store.identity import file_sha256


def _fields(path) -> dict:
    return {k: f.contents() for k, f in fast_reader(str(path)).fields.items()
            if not k.startswith("GGUF.")}


def test_blocks_are_renumbered_and_every_other_byte_is_copied(smollm2_q4_1, tmp_path):
    dst = tmp_path / "smol.gguf"
    rec = build(smollm2_q4_1, dst, [3, 17])
    src, out = fast_reader(smollm2_q4_1), fast_reader(str(dst))
    by_name = {t.name: t for t in src.tensors}
    kept = [b for b in range(30) if b not in (3, 17)]
    names = []
    for t in out.tensors:
        old = t.name
        if t.name.startswith("blk."):
            i = int(t.name.split(".")[1])
            old = f"blk.{kept[i]}.{t.name.split('.', 2)[2]}"
        names.append(old)
        s = by_name[old]
        assert t.tensor_type == s.tensor_type and bytes(t.data) == bytes(s.data), t.name
    assert sorted(names) == sorted(n for n in by_name if not n.startswith(("blk.3.", "blk.17.")))
    before, after = _fields(smollm2_q4_1), _fields(dst)
    assert after.pop("llama.block_count") == 28 and before.pop("llama.block_count") == 30
    prov = {k: after.pop(k) for k in list(after) if k.startswith("edgepick.prune.")}
    assert after == before  # every other key unchanged
    assert prov["edgepick.prune.removed"] == [3, 17]
    assert prov["edgepick.prune.source_sha256"] == file_sha256(smollm2_q4_1)
    assert prov["edgepick.prune.ranking"] == "given"
    assert rec.removed == [3, 17] and rec.blocks_before == 30 and rec.sha256 == file_sha256(str(dst))
    again = build(smollm2_q4_1, dst, [17, 3])
    assert again.skipped and again.sha256 == rec.sha256


def test_gemma3_sliding_window_layout_is_written_per_layer(gemma3_q4_k_m, tmp_path):
    dst = tmp_path / "gemma.gguf"
    build(gemma3_q4_k_m, dst, [5, 6])
    pattern = _fields(dst)["gemma3.attention.sliding_window_pattern"]
    # llama.cpp's default for gemma3: every 6th layer (5, 11, 17) is global
    source_layout = [il % 6 < 5 for il in range(18)]
    kept = [b for b in range(18) if b not in (5, 6)]
    assert pattern == [source_layout[b] for b in kept]
    spec = gguf_spec(str(dst))
    assert spec.n_layers == 16 and [i for i in range(16) if i not in spec.swa_layers] == [9, 15]
    assert _fields(dst)["gemma3.block_count"] == 16


@pytest.mark.parametrize("model,removed", [("smollm2_q4_1", [0, 29]), ("gemma3_q4_k_m", [5])])
def test_the_predicted_shape_is_the_written_one(request, model, removed, tmp_path):
    src = request.getfixturevalue(model)
    dst = tmp_path / "p.gguf"
    build(src, dst, removed)
    predicted, actual = without_blocks(gguf_spec(src), removed), gguf_spec(str(dst))
    assert abs(predicted.file_size_bytes / actual.file_size_bytes - 1) < 1e-3
    for field in ("n_layers", "n_kv_heads", "swa_layers", "n_params", "quant_types"):
        assert getattr(predicted, field) == getattr(actual, field), field
    assert [t.name for t in predicted.tensors] == [t.name for t in actual.tensors]


_synthetic = block_model


@pytest.mark.parametrize("arch,kv,why", [
    ("llama", {"llama.nextn_predict_layers": 1}, "next-token-prediction heads"),
    ("gemma3n", {"gemma3n.attention.shared_kv_layers": 2}, "reuse earlier layers' KV cache"),
    ("qwen3next", {"qwen3next.full_attention_interval": 4}, "linear and full attention"),
    ("smollm3", {}, "skips RoPE"),
    ("llama", {"llama.mystery_per_layer": [1, 2, 3, 4]}, "refusing rather than guessing"),
    ("exaone", {"exaone.attention.sliding_window": 128}, "refusing rather than guessing"),
])
def test_a_model_that_cannot_lose_a_block_is_refused_and_nothing_written(tmp_path, arch, kv, why):
    src = _synthetic(tmp_path / "src.gguf", arch, kv)
    dst = tmp_path / "out.gguf"
    with pytest.raises(EdgepickError, match=why) as exc:
        build(src, dst, [1])
    assert "\n" not in str(exc.value) and not dst.exists()
    assert not list(tmp_path.glob("out.gguf*"))


def test_per_layer_arrays_are_sliced_and_scalars_kept(tmp_path):
    src = _synthetic(tmp_path / "src.gguf", "llama", {
        "llama.attention.head_count": [4, 8, 4, 8], "llama.attention.head_count_kv": 2,
        "llama.feed_forward_length": [10, 20, 30, 40], "llama.rope.dimension_sections": [1, 2, 3, 4],
        "llama.leading_dense_block_count": 2})
    dst = tmp_path / "out.gguf"
    build(src, dst, [1, 2])
    f = _fields(dst)
    assert f["llama.attention.head_count"] == [4, 8]
    assert f["llama.feed_forward_length"] == [10, 40]
    assert f["llama.attention.head_count_kv"] == 2
    assert f["llama.rope.dimension_sections"] == [1, 2, 3, 4]  # not one entry per block
    assert f["llama.leading_dense_block_count"] == 1  # block 0 of the first two is left
    out = {t.name: t.data for t in fast_reader(str(dst)).tensors}
    assert out["blk.1.attn_q.weight"][0, 0] == 3  # the old block 3, renumbered


def test_bad_requests_are_one_line(smollm2_q4_1, tmp_path):
    for removed, msg in [([30], "out of range"), (list(range(30)), "all 30 blocks"), ([], "no blocks")]:
        with pytest.raises(EdgepickError, match=msg):
            build(smollm2_q4_1, tmp_path / "x.gguf", removed)
    (tmp_path / "mine.gguf").write_text("a user's file")
    with pytest.raises(EdgepickError, match="not overwriting"):
        build(smollm2_q4_1, tmp_path / "mine.gguf", [1])
    assert (tmp_path / "mine.gguf").read_text() == "a user's file"
    assert parse_blocks("3, 7,12-14") == [3, 7, 12, 13, 14]
    with pytest.raises(EdgepickError, match="'x'"):
        parse_blocks("1,x")
    assert provenance(smollm2_q4_1) is None
