"""The decoder graph ONNX Runtime GenAI runs for a llama-family model, built from numpy weights.

It has the shape the official builder emits for CPU (seed 001 §4): fp32 activations,
GroupQueryAttention with a shared past/present KV buffer and rotary embedding inside,
(Skip)SimplifiedLayerNormalization, and plain MatMuls that onnxruntime's own quantizer then turns
into group-wise INT4 MatMulNBits.
"""

from __future__ import annotations


import numpy as np
from onnx import TensorProto, helper, numpy_helper

from edgepick.convert.gguf_source import GgufSource, LlamaHParams
from edgepick.progress import ProgressEvent, Tick

OPSET = 21
MS = "com.microsoft"


def rope_cache(hp: LlamaHParams, n_pos: int,
               factors: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin tables of shape (n_pos, head_dim/2), as GroupQueryAttention's do_rotary reads them."""
    inv = 1.0 / (hp.rope_theta ** (np.arange(0, hp.head_dim, 2, dtype=np.float64) / hp.head_dim))
    if factors is not None:
        inv = inv / factors.astype(np.float64)
    angles = np.outer(np.arange(n_pos, dtype=np.float64), inv)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def unpermute_rope_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's Q/K row permutation (convert_hf_to_gguf `permute`), back to the
    half-split layout that non-interleaved rotary expects."""
    hd = w.shape[0] // n_head
    return w.reshape(n_head, hd // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


class _Graph:
    def __init__(self) -> None:
        self.nodes: list = []
        self.inits: list = []
        self._n = 0

    def init(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, *, name: str,
           domain: str = "", **attrs) -> list[str]:
        outs = [f"{name}/output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, domain=domain,
                                           **attrs))
        return outs


def build_llama(src: GgufSource, n_pos: int,
                progress: Tick | None = None):
    """The fp32-weight ModelProto for `src`; `progress` hears each block done."""
    hp = src.hparams
    g = _Graph()
    g.init("one_i64", np.array([1], dtype=np.int64))
    g.init("one_scalar_i64", np.array(1, dtype=np.int64))
    emb = src.array("token_embd.weight")  # (n_vocab, n_embd)
    # The lookup table stays fp16 (half of fp32, exact for weights that came from a GGUF).
    g.init("model.embed_tokens.weight", emb.astype(np.float16))
    cos, sin = rope_cache(hp, n_pos, src.rope_factors())
    g.init("cos_cache", cos)
    g.init("sin_cache", sin)

    # attention_mask → seqlens_k (valid length - 1) and total sequence length, as the builder does
    s = g.op("ReduceSum", ["attention_mask", "one_i64"], name="/mask/ReduceSum", keepdims=0)[0]
    s = g.op("Sub", [s, "one_scalar_i64"], name="/mask/Sub")[0]
    seqlens_k = g.op("Cast", [s], name="/mask/Cast", to=TensorProto.INT32)[0]
    shape = g.op("Shape", ["attention_mask"], name="/mask/Shape")[0]
    total = g.op("Gather", [shape, "one_scalar_i64"], name="/mask/Gather", axis=0)[0]
    total = g.op("Cast", [total], name="/mask/Gather/Cast", to=TensorProto.INT32)[0]

    x = g.op("Gather", ["model.embed_tokens.weight", "input_ids"], name="/embed/Gather")[0]
    residual = g.op("Cast", [x], name="/embed/Cast", to=TensorProto.FLOAT)[0]
    hidden = g.op("SimplifiedLayerNormalization",
                  [residual, g.init("blk.0.attn_norm", src.array("blk.0.attn_norm.weight"))],
                  name="/layers.0/input_layernorm", axis=-1, epsilon=hp.rms_eps, stash_type=1)[0]

    def linear(name: str, inp: str, w: np.ndarray) -> str:
        # GGUF rows are outputs; MatMul wants (in, out)
        return g.op("MatMul", [inp, g.init(f"{name}.weight", np.ascontiguousarray(w.T))],
                    name=f"{name}/MatMul")[0]

    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                            ["batch_size", "sequence_length"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                            ["batch_size", "total_sequence_length"])]
    outputs = []
    kv_shape = lambda s: ["batch_size", hp.n_head_kv, s, hp.head_dim]  # noqa: E731
    for i in range(hp.n_layers):
        p, b = f"/layers.{i}", f"blk.{i}"
        q = linear(f"{p}/attn/q_proj", hidden,
                   unpermute_rope_rows(src.array(f"{b}.attn_q.weight"), hp.n_head))
        k = linear(f"{p}/attn/k_proj", hidden,
                   unpermute_rope_rows(src.array(f"{b}.attn_k.weight"), hp.n_head_kv))
        v = linear(f"{p}/attn/v_proj", hidden, src.array(f"{b}.attn_v.weight"))
        past_k, past_v = f"past_key_values.{i}.key", f"past_key_values.{i}.value"
        present_k, present_v = f"present.{i}.key", f"present.{i}.value"
        inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, kv_shape("past_sequence_length"))
                   for n in (past_k, past_v)]
        attn = g.op("GroupQueryAttention",
                    [q, k, v, past_k, past_v, seqlens_k, total, "cos_cache", "sin_cache"],
                    name=f"{p}/attn/GroupQueryAttention", domain=MS, n_out=1,
                    num_heads=hp.n_head, kv_num_heads=hp.n_head_kv,
                    scale=float(1.0 / np.sqrt(hp.head_dim)), do_rotary=1, rotary_interleaved=0,
                    local_window_size=-1, softcap=0.0)[0]
        # GroupQueryAttention's present outputs are its 2nd and 3rd; rename them in place
        g.nodes[-1].output.extend([present_k, present_v])
        outputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT,
                                                  kv_shape("total_sequence_length"))
                    for n in (present_k, present_v)]
        o = linear(f"{p}/attn/o_proj", attn, src.array(f"{b}.attn_output.weight"))
        hidden, _, _, residual = g.op(
            "SkipSimplifiedLayerNormalization",
            [o, residual, g.init(f"{b}.ffn_norm", src.array(f"{b}.ffn_norm.weight"))],
            n_out=4, name=f"{p}/post_attention_layernorm", domain=MS, epsilon=hp.rms_eps)
        gate = linear(f"{p}/mlp/gate_proj", hidden, src.array(f"{b}.ffn_gate.weight"))
        up = linear(f"{p}/mlp/up_proj", hidden, src.array(f"{b}.ffn_up.weight"))
        sig = g.op("Sigmoid", [gate], name=f"{p}/mlp/act/Sigmoid")[0]
        act = g.op("Mul", [gate, sig], name=f"{p}/mlp/act/Mul")[0]
        prod = g.op("Mul", [act, up], name=f"{p}/mlp/Mul")[0]
        down = linear(f"{p}/mlp/down_proj", prod, src.array(f"{b}.ffn_down.weight"))
        last = i == hp.n_layers - 1
        norm_name = "output_norm" if last else f"blk.{i + 1}.attn_norm"
        hidden, _, _, residual = g.op(
            "SkipSimplifiedLayerNormalization",
            [down, residual, g.init(norm_name, src.array(f"{norm_name}.weight"))], n_out=4,
            name="/model/norm" if last else f"/layers.{i + 1}/input_layernorm", domain=MS,
            epsilon=hp.rms_eps)
        if progress:
            progress(ProgressEvent(i + 1, hp.n_layers, "graph"))
    head = emb if hp.tied_output else src.array("output.weight")
    logits = linear("/lm_head", hidden, head)
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/lm_head/Identity"))
    outputs.insert(0, helper.make_tensor_value_info(
        "logits", TensorProto.FLOAT, ["batch_size", "sequence_length", hp.n_vocab]))
    graph = helper.make_graph(g.nodes, "main_graph", inputs, outputs, initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid(MS, 1)],
                              producer_name="edgepick")
    model.ir_version = 10
    return model
