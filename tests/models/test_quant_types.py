"""Per-tensor type prediction against llama.cpp's own quantizer on a real model."""

import ctypes

import llama_cpp
import pytest

from edgepick.models.gguf_info import gguf_spec
from edgepick.models.quant_types import bits_per_weight, normalize_ftype, planned_tensor_types
from edgepick.errors import EdgepickError

FTYPES = {"Q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0, "Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
          "Q4_K_M": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M, "Q3_K_M": llama_cpp.LLAMA_FTYPE_MOSTLY_Q3_K_M,
          "Q2_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q2_K, "Q5_K_M": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_K_M}


@pytest.fixture(scope="module")
def quantized(tiny_model, tmp_path_factory):
    out = {}
    folder = tmp_path_factory.mktemp("quant")
    for name, ftype in FTYPES.items():
        dst = folder / f"tiny.{name}.gguf"
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = ftype
        params.nthread = 2
        assert llama_cpp.llama_model_quantize(tiny_model.encode(), str(dst).encode(),
                                              ctypes.byref(params)) == 0
        out[name] = str(dst)
    return out


@pytest.mark.parametrize("ftype", list(FTYPES))
def test_prediction_matches_llama_quantize_tensor_by_tensor(tiny_model, quantized, ftype):
    src = gguf_spec(tiny_model)
    real = {t.name: (t.type, t.n_bytes) for t in gguf_spec(quantized[ftype]).tensors}
    plan = planned_tensor_types([(t.name, t.shape, t.type) for t in src.tensors], ftype,
                                n_gqa=src.n_heads // src.n_kv_heads[0])
    assert {p.name: (p.type, p.n_bytes) for p in plan} == real


def test_fallbacks_are_reported_for_rows_not_divisible_by_256(tiny_model):
    src = gguf_spec(tiny_model)  # SmolLM2 rows are 576 wide: K-quants fall back
    plan = planned_tensor_types([(t.name, t.shape, t.type) for t in src.tensors], "Q4_K_M")
    fell = {p.name: (p.fell_back_from, p.type) for p in plan if p.fell_back_from}
    assert fell["blk.0.attn_q.weight"] == ("Q4_K", "Q5_0")
    assert "blk.0.ffn_down.weight" not in fell  # 1536 = 6 × 256


def test_type_table_includes_block_scales():
    assert bits_per_weight("Q4_0") == 4.5
    assert bits_per_weight("Q8_0") == 8.5
    assert bits_per_weight("Q4_K") == 4.5
    assert bits_per_weight("Q6_K") == pytest.approx(6.5625)


def test_unknown_type_name_is_a_clear_error():
    with pytest.raises(EdgepickError, match="unknown quantization type 'Q9_X'"):
        normalize_ftype("Q9_X")
    assert normalize_ftype("q4_k_m") == "Q4_K_M"
