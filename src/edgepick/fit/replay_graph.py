"""The prompt graph llama.cpp reserves for a Llama, Qwen3-MoE or Gemma-3 model, node for node,
for fit/alloc_replay.py: src/models/llama.cpp, qwen3moe.cpp and gemma3.cpp over src/llama-graph.cpp
(`build_inp_embd` keeps the unused `inp_embd` input in the graph through
`ggml_build_forward_select`; `build_attn`; `build_moe_ffn`; the last layer on the output rows
only; `set_outputs` marks the final norm and the logits as outputs). F32 activations."""

from __future__ import annotations

from collections.abc import Callable

from edgepick.fit.alloc_replay import T, view
from edgepick.records.model import ModelSpec

F32 = 4
# the per-layer tensors each graph below reads: a file with others (biases, experts in a
# Llama, shared experts) is left to fit/device_compute.py's rules
LAYER_TENSORS = {
    "llama": {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
              "ffn_up", "ffn_down"},
    "qwen3moe": {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm",
                 "attn_k_norm", "ffn_norm", "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps",
                 "ffn_down_exps"},
    "gemma3": {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm",
               "attn_k_norm", "post_attention_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down",
               "post_ffw_norm"},
}


def replayable(spec: ModelSpec) -> bool:
    """Whether prompt_graph builds this model's graph as llama.cpp does."""
    known = LAYER_TENSORS.get(spec.architecture)
    if not known or spec.kv_lora_rank or not spec.tensors:
        return False
    if spec.swa_layers and spec.architecture != "gemma3":
        return False
    seen = {t.name.split(".")[2] for t in spec.tensors if t.name.startswith("blk.")}
    return seen == known


class _Graph:
    def __init__(self, weight: Callable[[str], T]) -> None:
        self.nodes: list[T] = []
        self.weight = weight

    def add(self, t: T) -> T:
        self.nodes.append(t)
        return t

    def op(self, op: str, srcs: list[T], nbytes: int, layout: tuple) -> T:
        return self.add(T(op.lower(), nbytes, op, list(srcs), layout=layout))

    def view(self, t: T, op: str = "VIEW", nbytes: int | None = None, layout: tuple = ()) -> T:
        return self.add(view(t, op, nbytes, layout))

    def mm(self, w: str, x: T, rows: int, n: int) -> T:
        return self.op("MUL_MAT", [self.weight(w), x], F32 * rows * n, (rows, n))

    def norm(self, x: T, w: str) -> T:
        n = self.op("RMS_NORM", [x], x.nbytes, x.layout)
        return self.op("MUL", [n, self.weight(w)], x.nbytes, x.layout)


def _attention(g: _Graph, spec: ModelSpec, il: int, x: T, inp: dict[str, T], cache: tuple[T, T],
               n: int, n_kv: int, fa: bool) -> T:
    hd, hv, nh = spec.head_dim_k, spec.head_dim_v, spec.n_heads
    nkv = spec.n_kv_heads[il] if spec.n_kv_heads else nh
    gemma = spec.architecture == "gemma3"
    qk_norm = spec.architecture in ("qwen3moe", "gemma3")
    blk = f"blk.{il}."
    out = {}
    # the order ggml's graph holds them in (Gemma-3's K before V, as llama.cpp's log shows)
    order = (("q", nh, hd), ("k", nkv, hd), ("v", nkv, hv)) if gemma else \
        (("q", nh, hd), ("v", nkv, hv), ("k", nkv, hd))
    for name, heads, width in order:
        cur = g.view(g.mm(blk + f"attn_{name}.weight", x, heads * width, n), "RESHAPE",
                     layout=(width, heads, n))
        if name != "v":
            if qk_norm:
                cur = g.norm(cur, blk + f"attn_{name}_norm.weight")
            cur = g.op("ROPE", [cur, inp["pos"]], cur.nbytes, cur.layout)
            if gemma and name == "q":  # the attention scale on Q
                cur = g.op("SCALE", [cur], cur.nbytes, cur.layout)
        out[name] = cur
    for name, idxs in (("k", "k_idxs"), ("v", "v_idxs")):
        dst = cache[name == "v"]
        rows = view(dst)
        rows.backend = dst.backend
        g.add(T("set_rows", 0, "SET_ROWS", [rows, g.view(out[name]), inp[idxs]], view_src=dst))
    q = g.view(out["q"], "PERMUTE", layout=("p", hd, nh, n))
    k, v = g.view(cache[0]), g.view(cache[1])
    if fa:
        cur = g.op("FLASH_ATTN_EXT", [q, k, v, inp["mask"]], F32 * hv * nh * n, (hv, nh, n))
        cur = g.view(cur, "RESHAPE", layout=(hv * nh, n))
    else:
        kq = g.op("MUL_MAT", [k, q], F32 * n_kv * n * nh, (n_kv, n, nh))
        kq = g.op("SOFT_MAX", [kq, inp["mask"]], kq.nbytes, kq.layout)
        kqv = g.op("MUL_MAT", [v, kq], F32 * hv * n * nh, (hv, n, nh))
        cur = g.op("CONT", [g.view(kqv, "PERMUTE", layout=("p", hv, nh, n))], kqv.nbytes,
                   (hv * nh, n))
    return g.mm(blk + "attn_output.weight", cur, spec.n_embd, n)


def _moe(g: _Graph, spec: ModelSpec, il: int, x: T, n: int) -> T:
    e, blk = spec.n_embd, f"blk.{il}."
    n_exp, used = spec.n_experts, spec.n_experts_used
    n_ff = next(t.shape[1] for t in spec.tensors if t.name == blk + "ffn_up_exps.weight")
    probs = g.mm(blk + "ffn_gate_inp.weight", x, n_exp, n)
    probs = g.op("SOFT_MAX", [probs], probs.nbytes, probs.layout)
    probs_r = g.view(probs, "RESHAPE", layout=(1, n_exp, n))
    # the first n_used of each token's n_expert: a strided view, and ggml_nbytes (what a copy
    # of it to another backend takes) spans the strides
    topk = g.view(g.op("ARGSORT", [probs], 4 * n_exp * n, ("i", n_exp, n)),
                  nbytes=4 * ((n - 1) * n_exp + used))
    weights = g.view(g.op("GET_ROWS", [probs_r, topk], F32 * used * n, (1, used, n)),
                     "RESHAPE", layout=(used, n))
    total = g.op("SUM_ROWS", [weights], F32 * n, (1, n))
    total = g.op("CLAMP", [total], total.nbytes, total.layout)
    norm = g.op("DIV", [weights, total], F32 * used * n, (used, n))
    norm = g.view(norm, "RESHAPE", layout=(1, used, n))
    x = g.view(x, "RESHAPE", layout=(e, 1, n))

    def experts(name: str, src: T, rows: int) -> T:
        return g.op("MUL_MAT_ID", [g.weight(blk + f"ffn_{name}_exps.weight"), src, topk],
                    F32 * rows * used * n, (rows, used, n))

    gate = experts("gate", x, n_ff)
    up = experts("up", x, n_ff)
    act = g.op("SWIGLU", [gate, up], gate.nbytes, gate.layout)
    down = experts("down", act, e)
    down = g.op("MUL", [down, norm], down.nbytes, down.layout)
    parts = [g.view(down, nbytes=F32 * ((n - 1) * e * used + e), layout=("s", e, n))
             for _ in range(used)]
    out = parts[0]
    for part in parts[1:]:
        out = g.op("ADD", [out, part], F32 * e * n, (e, n))
    return out if used > 1 else g.op("CONT", [out], F32 * e * n, (e, n))


def _inputs(spec: ModelSpec, cells: list[int], n: int, n_outputs: int, fa: bool,
            cpu: int) -> tuple[dict[str, T], list[dict[str, T]], list[T]]:
    """The graph inputs: the shared ones, one set of cache indices and KQ mask per layer (a
    sliding-window cache has its own), and every input in the order the graph meets them."""
    v_idx = n * (1 if fa else max(spec.n_kv_heads or [spec.n_heads]) * spec.head_dim_v)
    shared = {k: T(f"inp_{k}", b, backend=cpu) for k, b in
              (("tokens", 4 * n), ("embd", F32 * spec.n_embd * n), ("pos", 4 * n))}
    leafs = list(shared.values())
    kinds: dict[bool, dict[str, T]] = {}
    per_layer = []
    for il in range(spec.n_layers):
        swa = il in spec.swa_layers
        if swa not in kinds:
            kinds[swa] = {k: T(f"inp_{k}", b, backend=cpu) for k, b in
                          (("k_idxs", 8 * n), ("v_idxs", 8 * v_idx),
                           ("mask", cells[il] * n * (2 if fa else F32)))}
            leafs += kinds[swa].values()
        per_layer.append(shared | kinds[swa])
    shared["out_ids"] = T("inp_out_ids", 4 * n_outputs, backend=cpu)
    leafs.append(shared["out_ids"])
    return shared, per_layer, leafs


def _dense(g: _Graph, il: int, x: T, rows: int, width: int, e: int) -> T:
    gate = g.mm(f"blk.{il}.ffn_gate.weight", x, width, rows)
    up = g.mm(f"blk.{il}.ffn_up.weight", x, width, rows)
    act = g.op("GLU", [gate, up], gate.nbytes, gate.layout)
    return g.mm(f"blk.{il}.ffn_down.weight", act, e, rows)


def prompt_graph(spec: ModelSpec, weight: Callable[[str], T], caches: list[tuple[T, T]],
                 cells: list[int], n_tokens: int, n_outputs: int, fa: bool,
                 cpu: int) -> tuple[list[T], list[T]]:
    """The nodes in llama.cpp's order and the graph inputs (leafs, on the CPU)."""
    g = _Graph(weight)
    e, n = spec.n_embd, n_tokens
    gemma = spec.architecture == "gemma3"
    inp, per_layer, leafs = _inputs(spec, cells, n, n_outputs, fa, cpu)
    cur = g.op("GET_ROWS", [weight("token_embd.weight"), inp["tokens"]], F32 * e * n, (e, n))
    if gemma:  # the embedding scaled by sqrt(n_embd)
        cur = g.op("SCALE", [cur], cur.nbytes, cur.layout)
    last = spec.n_layers - 1
    for il in range(spec.n_layers):
        residual = cur
        cur = _attention(g, spec, il, g.norm(cur, f"blk.{il}.attn_norm.weight"),
                         per_layer[il], caches[il], n, cells[il], fa)
        rows = n
        if il == last:
            rows = n_outputs
            cur = g.op("GET_ROWS", [cur, inp["out_ids"]], F32 * e * rows, (e, rows))
            residual = g.op("GET_ROWS", [residual, inp["out_ids"]], F32 * e * rows, (e, rows))
        if gemma:
            cur = g.norm(cur, f"blk.{il}.post_attention_norm.weight")
        ffn_inp = g.op("ADD", [cur, residual], F32 * e * rows, (e, rows))
        x = g.norm(ffn_inp, f"blk.{il}.ffn_norm.weight")
        if spec.architecture == "qwen3moe":
            cur = _moe(g, spec, il, x, rows)
        else:
            width = next(t.shape[1] for t in spec.tensors
                         if t.name == f"blk.{il}.ffn_up.weight")
            cur = _dense(g, il, x, rows, width, e)
        if gemma:
            cur = g.norm(cur, f"blk.{il}.post_ffw_norm.weight")
        cur = g.op("ADD", [cur, ffn_inp], F32 * e * rows, (e, rows))
    cur = g.norm(cur, "output_norm.weight")
    cur.output = True
    logits = g.mm("output.weight", cur, spec.vocab_size, n_outputs)
    logits.output = True
    return g.nodes, leafs
