"""KV cache arithmetic: the seeds' formula, GQA/MQA, K≠V head sizes, sliding-window layers."""

import json

import pytest

from edgepick.fit.memory import attention_load, kv_cache_bytes, kv_read_bytes
from edgepick.models.hf_config import hf_config_spec

GIB = 1024**3


def write_config(tmp_path, **over):
    cfg = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
           "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
           "vocab_size": 32000, "max_position_embeddings": 4096, "torch_dtype": "float16"}
    cfg.update(over)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def test_llama2_7b_shape_2048_f16_is_exactly_one_gib(tmp_path):
    spec = hf_config_spec(write_config(tmp_path))
    assert kv_cache_bytes(spec, 2048, "f16") == 1 * GIB


def test_llama3_8b_shape_gqa_8192_is_exactly_one_gib(tmp_path):
    spec = hf_config_spec(write_config(tmp_path, num_key_value_heads=8, intermediate_size=14336,
                                       vocab_size=128256))
    assert kv_cache_bytes(spec, 8192, "f16") == 1 * GIB


def test_mqa_and_quantized_kv(tmp_path):
    spec = hf_config_spec(write_config(tmp_path, num_key_value_heads=1))
    assert kv_cache_bytes(spec, 2048, "f16") == GIB // 32
    # q8_0 stores 32 values in 34 bytes
    assert kv_cache_bytes(spec, 2048, "q8_0") == GIB // 32 * 34 // 64


def test_different_key_and_value_head_sizes(tmp_path):
    spec = hf_config_spec(write_config(tmp_path, head_dim=192, v_head_dim=128,
                                       num_key_value_heads=4))
    # llama.cpp pads the context to 256: 1000 tokens keep 1024 cells
    assert kv_cache_bytes(spec, 1024, "f16") == 32 * 1024 * 4 * (192 + 128) * 2
    assert kv_cache_bytes(spec, 1000, "f16") == kv_cache_bytes(spec, 1024, "f16")


def test_sliding_window_layers_keep_only_their_window(tmp_path):
    spec = hf_config_spec(write_config(
        tmp_path, model_type="gemma3_text", num_hidden_layers=6, sliding_window=512,
        num_key_value_heads=1, head_dim=256,
        layer_types=["sliding_attention"] * 5 + ["full_attention"]))
    assert spec.swa_layers == [0, 1, 2, 3, 4]
    row = 1 * 256 * 2 * 2  # one KV head, K and V, f16
    # llama.cpp: SWA layers keep pad256(min(ctx, window + n_ubatch)) cells
    assert kv_cache_bytes(spec, 8192, "f16", n_ubatch=512) == 5 * 1024 * row + 8192 * row
    assert kv_cache_bytes(spec, 512, "f16") == 6 * 512 * row
    # a decode step reads at most the window on SWA layers
    assert kv_read_bytes(spec, 8192, 4000, "f16") == 5 * 1024 * row + 4000 * row


def test_attention_load_counts_kv_and_query_heads_per_cached_position(tmp_path):
    spec = hf_config_spec(write_config(
        tmp_path, model_type="gemma3_text", num_hidden_layers=6, sliding_window=512,
        num_attention_heads=8, num_key_value_heads=2, head_dim=256,
        layer_types=["sliding_attention"] * 5 + ["full_attention"]))
    load = attention_load(spec, 8192, 4000, n_ubatch=512)
    positions = 5 * 1024 + 4000  # SWA layers attend over their 1024 cells only
    assert load.kv_position_heads == positions * 2
    assert load.query_position_heads == positions * 8
    assert load.head_dims == 512


def test_sliding_window_pattern_from_gguf(gemma3_q4_k_m):
    from edgepick.models.gguf_info import gguf_spec

    spec = gguf_spec(gemma3_q4_k_m)
    assert spec.sliding_window == 512
    assert [i for i in range(spec.n_layers) if i not in spec.swa_layers] == [5, 11, 17]


@pytest.mark.parametrize("field,value", [("num_hidden_layers", "many"), ("hidden_size", -1)])
def test_bad_config_values_name_the_field(tmp_path, field, value):
    from edgepick.errors import InputError

    with pytest.raises(InputError, match=field):
        hf_config_spec(write_config(tmp_path, **{field: value}))
