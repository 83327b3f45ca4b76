"""The per-token hot path of greedy generation, kept to a few C calls, and decode timing.

Measured on SmolLM2 (49 152-token vocabulary), llama.cpp's greedy sampler costs ~175 µs a token:
it first builds a candidate array of the whole vocabulary. Greedy needs only the arg-max of the
logits, which numpy finds in ~10 µs over a zero-copy view, and with the same tie rule (the
first maximum). `Llama.eval([tok])` adds ~100 µs of Python per token (KV trimming, a per-token
batch fill loop, numpy bookkeeping); a persistent one-token batch costs a few µs. At 100 tok/s
the two together would be 3-5% of decode time that llama-bench does not pay.
"""

from __future__ import annotations

import ctypes
import time

import numpy as np

from edgepick.errors import EdgepickError


class GreedyStepper:
    """Arg-max sampling and one-token decoding for one llama.cpp context."""

    def __init__(self, llm) -> None:
        import llama_cpp

        self.llm = llm
        self.n_vocab = llm.n_vocab()
        self._row_type = ctypes.c_float * self.n_vocab
        self._batch = llama_cpp.llama_batch_init(1, 0, 1)
        self._batch.n_tokens = 1
        self._batch.n_seq_id[0] = 1
        self._batch.seq_id[0][0] = 0
        self._batch.logits[0] = True

    def logits_row(self, ctx, idx: int = -1) -> np.ndarray:
        """Zero-copy view of the logits at batch index `idx` (valid until the next decode)."""
        import llama_cpp

        ptr = llama_cpp.llama_get_logits_ith(ctx, idx)
        if not ptr:
            raise EdgepickError(f"llama.cpp returned no logits for batch index {idx}")
        return np.frombuffer(self._row_type.from_address(ctypes.addressof(ptr.contents)),
                             dtype=np.float32)

    def argmax(self, ctx, idx: int = -1) -> int:
        return int(self.logits_row(ctx, idx).argmax())

    def decode_one(self, tok: int) -> None:
        """Append `tok` to sequence 0 at the next position, as Llama.eval([tok]) would."""
        import llama_cpp

        llm = self.llm
        pos = llm.n_tokens
        self._batch.token[0] = tok
        self._batch.pos[0] = pos
        rc = llama_cpp.llama_decode(llm._ctx.ctx, self._batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        llm.input_ids[pos] = tok
        llm.n_tokens = pos + 1

    def free(self) -> None:
        import llama_cpp

        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None


def time_decode(llm, tokens: list[int], fills: list[int], n_tokens: int,
                repeats: int) -> dict[int, float]:
    """Seconds per single-token decode after each cached fill (the engine probe's timing): the
    cache is filled to `fill` with `tokens`, then `n_tokens` one-token decodes are timed, the
    fastest of `repeats` passes after a warm-up pass (it warms the caches and repacked weights)."""
    import llama_cpp

    ctx = llm._ctx.ctx
    memory = llama_cpp.llama_get_memory(ctx)
    n_batch = llm.context_params.n_batch
    if len(tokens) < max(fills) + n_tokens or max(fills) + n_tokens > llm.n_ctx():
        raise ValueError(f"time_decode needs {max(fills) + n_tokens} tokens within the context")
    one = llama_cpp.llama_batch_init(1, 0, 1)
    one.n_tokens, one.n_seq_id[0], one.seq_id[0][0], one.logits[0] = 1, 1, 0, True
    out: dict[int, float] = {}
    cached = 0
    llama_cpp.llama_memory_clear(memory, True)
    try:
        for fill in sorted(fills):
            while cached < fill:
                k = min(n_batch, fill - cached)
                arr = (llama_cpp.llama_token * k)(*tokens[cached:cached + k])
                if llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(arr, k)) != 0:
                    raise RuntimeError(f"prompt decode failed at {cached} tokens")
                cached += k
            best = float("inf")
            for repeat in range(repeats + 1):
                llama_cpp.llama_memory_seq_rm(memory, 0, fill, -1)
                t0 = time.perf_counter()
                for i in range(n_tokens):
                    one.token[0], one.pos[0] = tokens[fill + i], fill + i
                    if llama_cpp.llama_decode(ctx, one) != 0:
                        raise RuntimeError(f"decode failed at position {fill + i}")
                    llama_cpp.llama_get_logits_ith(ctx, -1)
                if repeat:
                    best = min(best, (time.perf_counter() - t0) / n_tokens)
            llama_cpp.llama_memory_seq_rm(memory, 0, fill, -1)
            out[fill] = best
    finally:
        llama_cpp.llama_batch_free(one)
        llama_cpp.llama_memory_clear(memory, True)
        llm.n_tokens = 0  # the Llama's own bookkeeping no longer matches the memory
    return out


def sampler_chain(sampling: dict, default_seed: int, n_vocab: int):
    """llama.cpp's own sampler chain for `sampling`, in llama-server's order (penalties, top-k,
    top-p, temperature, then a seeded draw), so a sample here is what the server would draw.
    Unset fields stay off (llama-server would apply its defaults); without a seed the
    run's seed is used. Free with llama_sampler_free."""
    import llama_cpp

    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    add = lambda s: llama_cpp.llama_sampler_chain_add(chain, s)  # noqa: E731
    if sampling.get("repeat_penalty") not in (None, 1.0):  # over the last 64, as llama-server
        add(llama_cpp.llama_sampler_init_penalties(n_vocab, 64, float(sampling["repeat_penalty"]),
                                                   0.0, 0.0))
    if sampling.get("top_k"):
        add(llama_cpp.llama_sampler_init_top_k(int(sampling["top_k"])))
    if sampling.get("top_p") not in (None, 1.0):
        add(llama_cpp.llama_sampler_init_top_p(float(sampling["top_p"]), 1))
    add(llama_cpp.llama_sampler_init_temp(float(sampling["temperature"])))
    seed = sampling.get("seed")
    seed = default_seed if seed is None else seed
    add(llama_cpp.llama_sampler_init_dist(int(seed) & 0xFFFFFFFF))
    return chain
