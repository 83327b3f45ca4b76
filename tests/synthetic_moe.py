"""Tiny random GGUFs of architectures the bundled files lack: a mixture of experts (`qwen3moe`)
and DeepSeek's multi-head latent attention with experts (`deepseek2`).

They carry SmolLM2's tokenizer so that llama.cpp loads and runs them; the weights are random
(memory, KV allocation and bytes read per token do not depend on their values). The shapes are
written the way llama.cpp's converter writes them (conversion/qwen.py, conversion/deepseek.py),
and tests check the planner's predictions against a real llama_context built from them.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from edgepick.assets import bundled


def _write(dst: Path, arch: str, keys: dict, tensors: dict[str, list[int]]) -> None:
    """`tensors`: name -> GGUF shape (ne0 first); 1-D tensors F32 ones, the rest random F16
    (the expert routers F32, as the converter writes them)."""
    import gguf

    from edgepick.models.gguf_fast_reader import fast_reader

    tok = fast_reader(str(bundled.tiny_f16()))
    tmp = dst.with_name(dst.name + f".tmp{os.getpid()}")
    w = gguf.GGUFWriter(str(tmp), arch=arch)
    for field in tok.fields.values():
        if field.name.startswith("tokenizer."):
            vt = field.types[0]
            sub = field.types[-1] if vt == gguf.GGUFValueType.ARRAY else None
            w.add_key_value(field.name, field.contents(), vt, sub_type=sub)
    n_vocab = len(tok.fields["tokenizer.ggml.tokens"].contents())
    w.add_name(dst.stem)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    for key, value in keys.items():
        if isinstance(value, float):
            w.add_float32(f"{arch}.{key}", value)
        else:
            w.add_uint32(f"{arch}.{key}", int(value))
    w.add_uint32(f"{arch}.vocab_size", n_vocab)
    rng = np.random.default_rng(0)
    for name, shape in tensors.items():
        shape = [n_vocab if d == -1 else d for d in shape]
        np_shape = tuple(reversed(shape))
        if len(shape) == 1:
            data = np.ones(np_shape, dtype=np.float32)
        elif "ffn_gate_inp" in name:
            data = (rng.standard_normal(np_shape, dtype=np.float32) * 0.02)
        else:
            data = (rng.standard_normal(np_shape, dtype=np.float32) * 0.02).astype(np.float16)
        w.add_tensor(name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, dst)


def synthetic_qwen3moe(n_embd: int = 256, n_layers: int = 2, n_head: int = 4, n_head_kv: int = 2,
                       head_dim: int = 64, n_expert: int = 8, n_used: int = 2,
                       n_ff_exp: int = 256) -> Path:
    name = (f"synthetic-qwen3moe-{n_embd}x{n_layers}-h{n_head}-kv{n_head_kv}-e{n_expert}"
            f"u{n_used}-ff{n_ff_exp}.F16.gguf")
    keys = {"block_count": n_layers, "context_length": 4096, "embedding_length": n_embd,
            "feed_forward_length": n_ff_exp * n_used, "attention.head_count": n_head,
            "attention.head_count_kv": n_head_kv, "attention.key_length": head_dim,
            "attention.value_length": head_dim, "attention.layer_norm_rms_epsilon": 1e-6,
            "rope.freq_base": 1e6, "expert_count": n_expert, "expert_used_count": n_used,
            "expert_feed_forward_length": n_ff_exp}
    t: dict[str, list[int]] = {"token_embd.weight": [n_embd, -1], "output_norm.weight": [n_embd],
                               "output.weight": [n_embd, -1]}
    for i in range(n_layers):
        b = f"blk.{i}."
        t.update({b + "attn_norm.weight": [n_embd], b + "attn_q.weight": [n_embd, n_head * head_dim],
                  b + "attn_k.weight": [n_embd, n_head_kv * head_dim],
                  b + "attn_v.weight": [n_embd, n_head_kv * head_dim],
                  b + "attn_output.weight": [n_head * head_dim, n_embd],
                  b + "attn_q_norm.weight": [head_dim], b + "attn_k_norm.weight": [head_dim],
                  b + "ffn_norm.weight": [n_embd], b + "ffn_gate_inp.weight": [n_embd, n_expert],
                  b + "ffn_gate_exps.weight": [n_embd, n_ff_exp, n_expert],
                  b + "ffn_up_exps.weight": [n_embd, n_ff_exp, n_expert],
                  b + "ffn_down_exps.weight": [n_ff_exp, n_embd, n_expert]})
    return bundled.derived(name, lambda dst: _write(dst, "qwen3moe", keys, t))


def synthetic_deepseek2(n_embd: int = 256, n_layers: int = 3, n_head: int = 4,
                        kv_lora: int = 128, rope: int = 32, nope: int = 64, v_dim: int = 64,
                        n_expert: int = 8, n_used: int = 2, n_shared: int = 1, dense_lead: int = 1,
                        n_ff: int = 512, n_ff_exp: int = 128, q_lora: int = 96) -> Path:
    """DeepSeek-V3's layout, shrunk: MLA attention with low-rank Q (llama.cpp reads a full Q
    only for the 27-layer Lite), `dense_lead` dense FFN layers, then routed + shared experts."""
    name = (f"synthetic-deepseek2-{n_embd}x{n_layers}-h{n_head}-q{q_lora}-lora{kv_lora}-r{rope}"
            f"-e{n_expert}u{n_used}s{n_shared}.F16.gguf")
    keys = {"block_count": n_layers, "context_length": 4096, "embedding_length": n_embd,
            "feed_forward_length": n_ff, "attention.head_count": n_head,
            "attention.head_count_kv": 1, "attention.key_length": kv_lora + rope,
            "attention.value_length": kv_lora, "attention.key_length_mla": nope + rope,
            "attention.value_length_mla": v_dim, "attention.kv_lora_rank": kv_lora,
            "attention.q_lora_rank": q_lora,
            "attention.layer_norm_rms_epsilon": 1e-6, "rope.dimension_count": rope,
            "rope.freq_base": 10000.0, "leading_dense_block_count": dense_lead,
            "expert_count": n_expert, "expert_used_count": n_used,
            "expert_shared_count": n_shared, "expert_feed_forward_length": n_ff_exp,
            "expert_weights_scale": 1.0}
    t: dict[str, list[int]] = {"token_embd.weight": [n_embd, -1], "output_norm.weight": [n_embd],
                               "output.weight": [n_embd, -1]}
    for i in range(n_layers):
        b = f"blk.{i}."
        t.update({b + "attn_norm.weight": [n_embd], b + "attn_q_a.weight": [n_embd, q_lora],
                  b + "attn_q_a_norm.weight": [q_lora],
                  b + "attn_q_b.weight": [q_lora, n_head * (nope + rope)],
                  b + "attn_kv_a_mqa.weight": [n_embd, kv_lora + rope],
                  b + "attn_kv_a_norm.weight": [kv_lora],
                  b + "attn_k_b.weight": [nope, kv_lora, n_head],
                  b + "attn_v_b.weight": [kv_lora, v_dim, n_head],
                  b + "attn_output.weight": [n_head * v_dim, n_embd], b + "ffn_norm.weight": [n_embd]})
        if i < dense_lead:
            t.update({b + "ffn_gate.weight": [n_embd, n_ff], b + "ffn_up.weight": [n_embd, n_ff],
                      b + "ffn_down.weight": [n_ff, n_embd]})
        else:
            sh = n_ff_exp * n_shared
            t.update({b + "ffn_gate_inp.weight": [n_embd, n_expert],
                      b + "ffn_gate_exps.weight": [n_embd, n_ff_exp, n_expert],
                      b + "ffn_up_exps.weight": [n_embd, n_ff_exp, n_expert],
                      b + "ffn_down_exps.weight": [n_ff_exp, n_embd, n_expert],
                      b + "ffn_gate_shexp.weight": [n_embd, sh], b + "ffn_up_shexp.weight": [n_embd, sh],
                      b + "ffn_down_shexp.weight": [sh, n_embd]})
    return bundled.derived(name, lambda dst: _write(dst, "deepseek2", keys, t))
