"""Sparse GGUFs of public shapes: the real header (metadata, a full-size vocabulary, the tensor
index) written with `gguf`, the tensor data left as a hole, so a 1 GB model costs its header on
disk. Optionally split as llama.cpp's gguf-split does (the model's keys in the first part,
`split.*` in every part), with gguf's own shard writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np

# Qwen2.5-0.5B-Instruct's config.json (hidden 896, intermediate 4864, 24 layers, 14 heads,
# 2 KV heads, vocabulary 151936, tied embeddings) as llama.cpp's qwen2 tensors, F16 weights:
# 494 M parameters, 0.99 GB.
QWEN25_05B = dict(arch="qwen2", n_embd=896, n_ff=4864, n_layers=24, n_head=14, n_head_kv=2,
                  vocab=151936, ctx=32768)


def _tensors(s: dict) -> list[tuple[str, tuple[int, ...], str]]:
    d, ff, kv = s["n_embd"], s["n_ff"], s["n_head_kv"] * (s["n_embd"] // s["n_head"])
    out = [("token_embd.weight", (s["vocab"], d), "F16")]
    for i in range(s["n_layers"]):
        b = f"blk.{i}."
        out += [(b + "attn_norm.weight", (d,), "F32"), (b + "attn_q.weight", (d, d), "F16"),
                (b + "attn_q.bias", (d,), "F32"), (b + "attn_k.weight", (kv, d), "F16"),
                (b + "attn_k.bias", (kv,), "F32"), (b + "attn_v.weight", (kv, d), "F16"),
                (b + "attn_v.bias", (kv,), "F32"), (b + "attn_output.weight", (d, d), "F16"),
                (b + "ffn_norm.weight", (d,), "F32"), (b + "ffn_gate.weight", (ff, d), "F16"),
                (b + "ffn_up.weight", (ff, d), "F16"), (b + "ffn_down.weight", (d, ff), "F16")]
    return out + [("output_norm.weight", (d,), "F32")]


def sparse_gguf(path: Path, shape: dict = QWEN25_05B, parts: int = 1) -> list[Path]:
    """Write the model (in `parts` files when > 1) and return its file(s), first part first."""
    import gguf

    s = shape
    tensors = _tensors(s)
    per_part = -(-len(tensors) // parts) if parts > 1 else 0
    w = gguf.GGUFWriter(str(path), arch=s["arch"], split_max_tensors=per_part)
    a = s["arch"]
    w.add_name("Qwen2.5 0.5B Instruct (sparse stand-in)")
    for key, value in ((f"{a}.block_count", s["n_layers"]), (f"{a}.context_length", s["ctx"]),
                       (f"{a}.embedding_length", s["n_embd"]),
                       (f"{a}.feed_forward_length", s["n_ff"]),
                       (f"{a}.attention.head_count", s["n_head"]),
                       (f"{a}.attention.head_count_kv", s["n_head_kv"]),
                       ("general.file_type", int(gguf.LlamaFileType.MOSTLY_F16))):
        w.add_uint32(key, value)
    w.add_float32(f"{a}.rope.freq_base", 1e6)
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"tok{i}" for i in range(s["vocab"])])
    w.add_token_types([1] * s["vocab"])
    for name, dims, kind in tensors:
        qtype = gguf.GGMLQuantizationType[kind]
        n = int(np.prod(dims))
        w.add_tensor_info(name, dims, np.float16 if kind == "F16" else np.float32,
                          n * (2 if kind == "F16" else 4), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    files = []
    for fout, part in zip(w.fout, w.tensors):
        header_end = fout.tell()
        data = gguf.GGUFWriter.ggml_pad(header_end, w.data_alignment)
        size = data + sum(gguf.GGUFWriter.ggml_pad(ti.nbytes, w.data_alignment)
                          for ti in part.values())
        fout.truncate(size)  # a hole where the weights go
        files.append(Path(fout.name))
        fout.close()
    w.fout = None
    return files
