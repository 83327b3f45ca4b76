"""The compute buffer of each backend when a model is split across devices.

For Llama, Qwen3-MoE and Gemma-3 files (fit/replay_graph.py) the buffers are replayed: the prompt graph
llama.cpp reserves, node for node, through ggml's scheduler and allocator
(fit/alloc_replay.py). Which bytes are alive at the peak is not enough there: ggml-alloc puts a
split's input copies at the bottom of its buffer with the KQ mask above them and gives a
tensor larger than every hole below the space above the highest live one, so the buffer
depends on where each tensor lands. The replay agrees with llama.cpp's log to 0.01 MiB on the
placements docs/placement.md lists.

Other architectures keep rules read from the same source (ggml/src/ggml-backend.cpp,
`ggml_backend_sched_split_graph`: each op runs on the backend of its weight, the ops between
take a neighbour's, the graph inputs stay on the CPU and every tensor a split reads from
another backend is copied into its buffer), the most alive at one point, 4 bytes an element:
- a feed-forward it holds the weights of: gate, up and their product `3 × width` plus two
  `n_embd` rows per token, the width of routed experts being `n_ff_exp × n_expert_used`; the
  last layer's feed-forward runs on the output rows only (`build_inp_out_ids`), so it counts
  for nothing here;
- an attention it holds: the layer's input, its norm and the attention's output (three `n_embd`
  rows) and Q (`n_head × head size`); without flash attention the scores `n_head × n_kv` and K
  and V of the batch instead of Q;
- the LM head, on the output layer's device: `n_vocab + 2 n_embd` per output row on the CPU,
  beside the mask; on another device `n_vocab + n_embd`, after the mask is freed;
- the KQ mask (an input kept whole on the CPU, copied to every backend that runs a layer);
- on the CPU, two `n_embd` rows of the input embedding beside whatever it runs, except a CPU
  that only runs routed experts (`3 × width + n_embd`); on another device that runs the first
  layer, the embedding's copy (a split input) while that split runs;
- on the CPU without flash attention, V's cache indices (an int64 per element of the batch's V)
  beside the graph's other inputs before the first node.
They miss the holes, by up to a row or two (Gemma-3 was 3.5% low before its replay).

The rows of logits reserved depend on the engine: `n_outputs = min(n_tokens, n_outputs_max)`,
which llama-cpp-python leaves at n_batch and llama-server sets to its slots
(tools/server/server-context.cpp: `params_base.n_outputs_max = output_limits.total`).
"""

from __future__ import annotations

from collections import defaultdict

from edgepick.fit.alloc_replay import T, replay
from edgepick.fit.compute import F32, Batches, _kv_width, mask_bytes
from edgepick.fit.placement import CPU, TensorHome
from edgepick.fit.replay_graph import prompt_graph, replayable
from edgepick.records.model import ModelSpec

FFN_UP = ("ffn_up.weight", "ffn_up_shexp.weight", "ffn_up_exps.weight")
ATTN_Q = ("attn_q.weight", "attn_qkv.weight", "attn_q_a.weight")


def _layer(name: str) -> int:
    return int(name.split(".")[1]) if name.startswith("blk.") else -1


def backend_compute_bytes(spec: ModelSpec, homes: list[TensorHome], layers: list[str],
                          cells: list[int], b: Batches, flash_attn: bool,
                          n_outputs_max: int | None = None) -> dict[str, int]:
    """Backend -> compute buffer bytes, for the prompt graph llama.cpp reserves: replayed where
    fit/replay_graph.py builds the graph and a device beside the CPU runs part of it, else by
    the rules above."""
    if any(h.device != CPU for h in homes):
        replayed = replayed_compute_bytes(spec, homes, layers, cells, b, flash_attn,
                                          n_outputs_max)
        if replayed is not None:
            return replayed
    n_tokens = min(b.n_ctx, b.n_ubatch)
    n_outputs = min(n_tokens, b.n_batch if n_outputs_max is None else n_outputs_max)
    e, last = spec.n_embd, spec.n_layers - 1
    row = F32 * n_tokens * e
    dense: dict[str, int] = defaultdict(int)  # widest dense FFN a backend runs for every token
    experts: dict[str, int] = defaultdict(int)  # widest routed experts
    attn: set[str] = set()
    for h in homes:
        name, shape = h.tensor.name, h.tensor.shape
        il = _layer(name)
        if name.endswith(ATTN_Q):
            attn.add(h.device)
        # the last layer's feed-forward runs on the output rows only (build_inp_out_ids)
        elif name.endswith(FFN_UP) and len(shape) >= 2 and il != last:
            if name.endswith("_exps.weight"):
                experts[h.device] = max(experts[h.device], shape[1] * max(1, spec.n_experts_used))
            else:
                dense[h.device] = max(dense[h.device], shape[1])
    # without flash attention V is stored transposed, so V's cache indices are one int64 per
    # element of the batch's V (llama-kv-cache.cpp, `build_input_v_idxs`; one per cache kind):
    # on the CPU a graph input, which ggml-alloc allocates with the other leafs before any node
    # and frees after the CPU's last set_rows, before its last layer's peak
    v_width = max(spec.n_kv_heads or [spec.n_heads]) * spec.head_dim_v
    v_idxs = 0 if flash_attn else 8 * n_tokens * v_width * len(set(cells))
    masks = mask_bytes(cells, n_tokens, flash_attn)
    if flash_attn:  # the layer's input, its norm, Q and the attention's output
        attn_pt = F32 * n_tokens * (3 * e + spec.n_heads * spec.head_dim_k)
    else:  # the scores, and K and V of the batch beside them
        attn_pt = F32 * n_tokens * (3 * e + 2 * _kv_width(spec)
                                    + spec.n_heads * max(cells or [0]))
    output = layers[-1]
    first_ffn = next((h.device for h in homes if h.tensor.name.startswith("blk.0.")
                      and h.tensor.name.endswith(FFN_UP)), None)
    out: dict[str, int] = {}
    for dev in {CPU, *layers, *dense, *experts, *attn}:
        width = max(dense.get(dev, 0), experts.get(dev, 0))
        ffn_pt = F32 * n_tokens * (3 * width + 2 * e) if width else 0
        layer_pt = max(attn_pt if dev in attn else 0, ffn_pt)
        if dev == CPU:
            # the input embedding's rows stay beside whatever the CPU runs; a CPU that only
            # runs routed experts has them copied in and out per layer instead
            only_experts = dev not in attn and not dense.get(dev)
            points = [2 * row + v_idxs, (F32 * n_tokens * (3 * experts[dev] + e)) if only_experts
                      and experts.get(dev) else 2 * row + layer_pt]
        else:
            # the embedding copied in when the device runs the first layer, a split input alive
            # through that split: beside its attention, and beside its feed-forwards when the
            # first layer's feed-forward runs there too (no split back to the CPU in between)
            first = row if layers[0] == dev else 0
            points = [(attn_pt + first) if dev in attn else 0,
                      ffn_pt + (first if first_ffn == dev else 0)]
            layer_pt = max(points)
        out[dev] = masks + max(points) if dev == CPU or layer_pt else max(points)
        if dev == output:
            # the LM head: the logits and two n_embd rows per output on the CPU, beside the
            # mask; on a device one row, after the mask is freed (llama-fit-params' projections
            # of dense and MoE shapes at 512 and 2048 tokens of context, 512 output rows)
            head = F32 * n_outputs * (spec.vocab_size + (2 * e if dev == CPU else e))
            out[dev] = max(out[dev], head + (masks if dev == CPU else 0))
    return out


def replayed_compute_bytes(spec: ModelSpec, homes: list[TensorHome], layers: list[str],
                           cells: list[int], b: Batches, flash_attn: bool,
                           n_outputs_max: int | None = None) -> dict[str, int] | None:
    """Backend -> compute buffer bytes by replaying ggml's scheduler and allocator over the
    prompt graph (fit/alloc_replay.py), for the models fit/replay_graph.py builds; else None."""
    if not replayable(spec):
        return None
    names = list(dict.fromkeys([*(d for d in layers if d != CPU), *(h.device for h in homes
                                                                  if h.device != CPU)]))
    names.append(CPU)
    index = {d: i for i, d in enumerate(names)}
    cpu = index[CPU]
    weights: dict[str, int] = {}
    for h in homes:  # a tied embedding's copy for the LM head comes second
        if h.tensor.name in weights and h.tensor.name == "token_embd.weight":
            weights["output.weight"] = index[h.device]
        weights.setdefault(h.tensor.name, index[h.device])
    weights.setdefault("output.weight", weights["token_embd.weight"])

    def weight(name: str) -> T:
        return T(name, 0, weight=True, external=True, backend=weights.get(name, cpu))

    sizes = [0] * len(names)
    n_tokens = min(b.n_ctx, b.n_ubatch)
    n_outputs = min(n_tokens, b.n_batch if n_outputs_max is None else n_outputs_max)
    for tokens, outputs in ((n_tokens, n_outputs), (1, 1)):
        caches = [(T("cache_k", 0, external=True, backend=index[d]),
                   T("cache_v", 0, external=True, backend=index[d])) for d in layers[:-1]]
        nodes, leafs = prompt_graph(spec, weight, caches, cells, tokens, outputs, flash_attn, cpu)
        sizes = [max(a, c) for a, c in zip(sizes, replay(nodes, leafs, len(names)))]
    return {d: sizes[i] for d, i in index.items()}
