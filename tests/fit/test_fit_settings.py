"""What every runtime setting costs (issue 34 item 2): fit's KV cache and compute buffer against
llama.cpp's own allocation log for the same file and settings, on SmolLM2 Q8_0, Gemma-3 and
small synthetic shapes (dense with a wide FFN, MoE with many used experts, a tied Q4_0
embedding, Phi-3 with a window); and the rules where a load is not feasible here."""

from __future__ import annotations

import json

import pytest

from edgepick.devices.catalog import load_device
from edgepick.errors import EdgepickError
from edgepick.fit.compute import batches, pad_ctx
from edgepick.fit.memory import kv_cache_bytes
from edgepick.fit.overhead import activation_bytes, repacked_bytes
from edgepick.fit.planner import fit_one, plan_tensors
from edgepick.models.gguf_info import gguf_spec
from edgepick.models.hf_config import hf_config_spec
from llama_alloc_log import allocations, smollm2_q8_0

MIB = 2**20
DEV = load_device("laptop-16gb-cpu")


def estimate(spec, s: dict):
    return fit_one(spec, None, s["n_ctx"], DEV, kv_type=s.get("kv_type", "f16"),
                   kv_type_v=s.get("kv_type_v"), flash_attn=s.get("flash_attn", True),
                   n_batch=s.get("n_batch", 512), n_ubatch=s.get("n_ubatch", 512))


def check(path, settings: list[dict], rel: float = 0.05) -> None:
    spec = gguf_spec(path)
    for s, log in zip(settings, allocations(path, settings)):
        est = estimate(spec, s)
        assert est.kv_cache_bytes / MIB == pytest.approx(log["kv_mib"],
                                                         rel=0.002, abs=0.01), s
        assert est.compute_buffer_bytes / MIB == pytest.approx(log["compute_mib"], rel=rel), s


def test_smollm2_q8_0_kv_types_by_flash_attention():
    """The issue's grid: K and V types × flash attention (a quantized V needs it, so without
    it the K alone is quantized), at a context off the 256 grid too."""
    grid = [{"n_ctx": 4096, "kv_type": k, "flash_attn": True} for k in ("f16", "q8_0", "q4_0")]
    grid += [{"n_ctx": 4096, "kv_type": k, "kv_type_v": "f16", "flash_attn": False}
             for k in ("f16", "q8_0", "q4_0")]
    grid += [{"n_ctx": 3000, "kv_type": "q8_0", "kv_type_v": "q4_0"},
             {"n_ctx": 5000, "kv_type": "q4_0", "flash_attn": True, "n_ubatch": 128}]
    check(smollm2_q8_0(), grid)


def test_quantized_v_without_flash_attention_is_refused_like_llama_cpp():
    spec = gguf_spec(smollm2_q8_0())
    with pytest.raises(EdgepickError, match="flash attention"):
        estimate(spec, {"n_ctx": 2048, "kv_type": "q8_0", "flash_attn": False})


def test_batch_sizes_and_long_context_without_flash_attention():
    """Without flash attention the scores [n_kv, n_ubatch, n_head] outgrow the logits at long
    contexts; n_batch caps n_ubatch."""
    check(smollm2_q8_0(), [{"n_ctx": 8192, "flash_attn": False},
                           {"n_ctx": 12000, "flash_attn": False, "n_ubatch": 256},
                           {"n_ctx": 4096, "n_batch": 128},
                           {"n_ctx": 6000, "n_batch": 1024, "n_ubatch": 1024}])


def test_gemma3_sliding_window_and_a_large_vocabulary():
    from edgepick.assets.bundled import gemma3_270m_q4_k_m

    check(gemma3_270m_q4_k_m(), [{"n_ctx": 5000}, {"n_ctx": 3000, "n_ubatch": 256,
                                                     "kv_type": "q8_0"},
                                 {"n_ctx": 8192, "flash_attn": False, "n_ubatch": 128}])


def test_repacked_weights_are_the_repack_buffer_llama_cpp_logs():
    """Gemma-3 Q4_K_M: its Q4_K matmul weights are repacked on AVX2, its tied Q8_0 embedding
    is not (Q8_0 has no AVX2 repacked form), so no copy of it."""
    from edgepick.assets.bundled import gemma3_270m_q4_k_m
    from edgepick.devices.probe import cpu_features

    path = gemma3_270m_q4_k_m()  # on a CPU with no repacked forms both are 0
    tensors = plan_tensors(gguf_spec(path), None)[0]
    [log] = allocations(path, [{"n_ctx": 512}])
    assert repacked_bytes(tensors, cpu_features()) / MIB == pytest.approx(log["repack_mib"],
                                                                          abs=0.01)


def test_a_wide_dense_ffn_and_a_moe_with_many_used_experts():
    """Where the feed-forward, not the logits, sets the buffer: a dense FFN 128× the width,
    and eight used experts of 4096 (the used experts' width, not one expert's)."""
    from edgepick.assets.synthetic import synthetic_llama
    from synthetic_moe import synthetic_qwen3moe

    check(synthetic_llama(256, 32768, 1, 4, 2), [{"n_ctx": 1000}, {"n_ctx": 2048, "n_ubatch": 384}])
    moe = synthetic_qwen3moe(n_embd=256, n_layers=2, n_expert=8, n_used=8, n_ff_exp=4096)
    check(moe, [{"n_ctx": 1500}, {"n_ctx": 700, "flash_attn": False, "n_ubatch": 200}])


def test_moe_activations_count_the_used_experts():
    from synthetic_moe import synthetic_qwen3moe

    two = gguf_spec(synthetic_qwen3moe(n_embd=256, n_layers=1, n_expert=8, n_used=2,
                                       n_ff_exp=4096))
    eight = gguf_spec(synthetic_qwen3moe(n_embd=256, n_layers=1, n_expert=8, n_used=8,
                                         n_ff_exp=4096))
    attn = 4.6 * 5 * 4 * 64 * 512
    assert activation_bytes(two, 512) - attn == pytest.approx(4.6 * 3 * 4096 * 2 * 512, rel=1e-6)
    assert activation_bytes(eight, 512) - attn == pytest.approx(4.6 * 3 * 4096 * 8 * 512, rel=1e-6)


def test_tied_embedding_at_a_repacked_type_is_held_twice():
    """llama.cpp keeps token_embd for the lookups and repacks a copy for the LM head: its
    CPU_REPACK buffer holds the embedding (a Q4_0 tied synthetic shape)."""
    from edgepick.devices.probe import cpu_features
    from edgepick.assets.synthetic import quantized_pure, synthetic_llama

    path = quantized_pure(synthetic_llama(256, 768, 2, 4, 2), "Q4_0")
    spec = gguf_spec(path)
    assert spec.tied_embeddings
    tensors = plan_tensors(spec, None)[0]
    embd = next(t.n_bytes for t in tensors if t.name == "token_embd.weight")
    [log] = allocations(path, [{"n_ctx": 512}])  # this CPU's repacking, whatever it has
    assert repacked_bytes(tensors, cpu_features()) / MIB == pytest.approx(log["repack_mib"],
                                                                          abs=0.01)
    feats = ["avx2"]  # the rule, as on this project's AVX2 workers
    assert repacked_bytes(tensors, feats) > embd
    dev = DEV.model_copy(update={"cpu_features": feats})
    mapped = fit_one(spec, None, 512, dev)
    read = fit_one(spec, None, 512, dev, mmap=False)
    assert mapped.overhead_parts["repacked_weights"] >= embd  # the copy is anonymous memory
    assert mapped.reclaimable_parts["repacked_originals"] >= embd  # the original: lookups only
    assert read.overhead_parts["repacked_weights"] == embd  # read: original + copy
    # read into memory, llama.cpp holds the embedding in its CPU buffer and everything else,
    # the embedding's copy included, in its repack buffer
    [log] = allocations(path, [{"n_ctx": 512, "use_mmap": False}])
    if log["repack_mib"]:  # a CPU with a repacked Q4_0 form
        held = sum(t.n_bytes for t in tensors) + read.overhead_parts["repacked_weights"]
        assert held / MIB == pytest.approx(log["read_mib"] + log["repack_mib"], abs=0.02)


def _phi3(tmp_path, window: int):
    cfg = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072,
           "intermediate_size": 8192, "num_attention_heads": 32, "num_hidden_layers": 32,
           "num_key_value_heads": 32, "vocab_size": 32064, "max_position_embeddings": 131072,
           "sliding_window": window, "torch_dtype": "bfloat16", "tie_word_embeddings": False}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return hf_config_spec(str(path))


@pytest.mark.parametrize("n_ctx", [4096, 6000, 8192])
def test_phi3_runs_full_attention_whatever_its_window(tmp_path, n_ctx):
    """src/models/phi3.cpp reads sliding_window, then sets LLAMA_SWA_TYPE_NONE."""
    spec = _phi3(tmp_path, 2047)
    full = 32 * pad_ctx(n_ctx) * 3072 * 2 * 2
    assert kv_cache_bytes(spec, n_ctx, "f16") == full


def test_phi3_gguf_with_a_window_keeps_the_whole_context():
    """A phi3 GGUF carries phi3.attention.sliding_window: llama.cpp allocates every cell."""
    from synthetic_moe import _write  # noqa: PLC2701 - the shared tiny-GGUF writer
    from edgepick.assets import bundled

    e, f, layers = 256, 512, 2
    t = {"token_embd.weight": [e, -1], "output_norm.weight": [e], "output.weight": [e, -1]}
    for i in range(layers):
        b = f"blk.{i}."
        t.update({b + "attn_norm.weight": [e], b + "attn_qkv.weight": [e, 3 * e],
                  b + "attn_output.weight": [e, e], b + "ffn_norm.weight": [e],
                  b + "ffn_up.weight": [e, 2 * f], b + "ffn_down.weight": [f, e]})
    keys = {"block_count": layers, "context_length": 4096, "embedding_length": e,
            "feed_forward_length": f, "attention.head_count": 4, "attention.head_count_kv": 4,
            "attention.layer_norm_rms_epsilon": 1e-5, "rope.dimension_count": 64,
            "attention.sliding_window": 256}
    # not "phi3" in the name: llama-vocab.cpp then marks Phi-3 tokens SmolLM2 lacks
    path = bundled.derived("synthetic-p3-256x2-swa256.F16.gguf",
                           lambda dst: _write(dst, "phi3", keys, t))
    spec = gguf_spec(path)
    assert spec.sliding_window == 256 and spec.swa_layers
    [log] = allocations(path, [{"n_ctx": 3000}])
    assert log["cells"] == [3072]
    assert kv_cache_bytes(spec, 3000) / MIB == pytest.approx(log["kv_mib"])


@pytest.mark.parametrize("n_ctx,n_batch,n_ubatch,want", [
    (3000, 512, 512, (3072, 512, 512)), (300, 512, 512, (512, 300, 300)),
    (4096, 128, 512, (4096, 128, 128)), (5000, 2048, 1024, (5120, 2048, 1024))])
def test_batches_as_llama_context_sets_them(n_ctx, n_batch, n_ubatch, want):
    assert tuple(batches(n_ctx, n_batch, n_ubatch)) == want


def test_cache_types_llama_cpp_refuses_are_refused():
    """llama_init_from_model: a quantized K or V whose block does not divide the head size
    (heads of 48 against q4_0's 32) and different K and V types on a latent (MLA) cache."""
    from synthetic_moe import synthetic_deepseek2, synthetic_qwen3moe

    odd = gguf_spec(synthetic_qwen3moe(n_embd=384, n_layers=2, n_head=8, n_head_kv=4,
                                       head_dim=48, n_expert=4, n_used=3, n_ff_exp=2048))
    with pytest.raises(EdgepickError, match="does not divide the head size 48"):
        estimate(odd, {"n_ctx": 1024, "kv_type": "q4_0"})
    assert estimate(odd, {"n_ctx": 1024, "kv_type": "q4_0", "kv_type_v": "f16",
                          "flash_attn": False}).kv_type == "q4_0"  # unchecked without FA
    mla = gguf_spec(synthetic_deepseek2())
    with pytest.raises(EdgepickError, match="one type for K and V"):
        estimate(mla, {"n_ctx": 1024, "kv_type": "q8_0", "kv_type_v": "f16"})
