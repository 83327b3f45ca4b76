"""Concurrent requests in one llama.cpp context: one sequence per request, decoded together.

This is what a llama.cpp server does with parallel slots: every step puts one token of each
unfinished sequence into a single batch, so the weights are read once per step for all of them.
Prompts are packed into batches of up to n_batch tokens; a request's first token is sampled right
after the batch holding the end of its prompt, so requests later in the pack wait longer (their
TTFT includes the prefill of the ones before them), exactly as on a server receiving them at once.
Bench's concurrent requests prefill every prompt whole; eval's requests go through the slots
continuously and share prompt prefixes (llama_cpp_stream).
"""

from __future__ import annotations

import time

from edgepick.backends.base import Generation
from edgepick.errors import EdgepickError


def multi_sequence_context(llm, n_seq: int, shared: bool = False):
    """Replace the Llama's context by one holding `n_seq` sequences of n_ctx tokens each, or,
    `shared`, `n_seq` sequences in the one cache of n_ctx cells (llama-server's unified KV).

    The single-sequence context is freed first, so the process's memory high-water mark is that
    of the multi-sequence context, as it would be on a server sized for that concurrency."""
    import llama_cpp
    from llama_cpp import _internals

    params = type(llm.context_params).from_buffer_copy(llm.context_params)
    params.n_seq_max = n_seq
    params.n_ctx = llm.context_params.n_ctx * (1 if shared else n_seq)
    params.kv_unified = shared  # else each sequence gets its own n_ctx cells
    params.n_batch = max(params.n_batch, n_seq)
    llm._ctx.close()
    try:
        ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
    except ValueError as exc:
        raise EdgepickError(f"llama.cpp could not create a context for {n_seq} sequences "
                            f"of {llm.context_params.n_ctx} tokens ({exc})") from None
    llm._ctx = ctx
    llm.context_params = params
    assert llama_cpp.llama_n_seq_max(ctx.ctx) >= n_seq
    return ctx


class _Batch:
    def __init__(self, capacity: int, n_seq: int):
        import llama_cpp

        self.capacity = capacity
        self.b = llama_cpp.llama_batch_init(capacity, 0, n_seq)

    def clear(self) -> None:
        self.b.n_tokens = 0

    def add(self, token: int, pos: int, seq: int, logits: bool) -> int:
        i = self.b.n_tokens
        self.b.token[i] = token
        self.b.pos[i] = pos
        self.b.n_seq_id[i] = 1
        self.b.seq_id[i][0] = seq
        self.b.logits[i] = logits
        self.b.n_tokens = i + 1
        return i

    def free(self) -> None:
        import llama_cpp

        llama_cpp.llama_batch_free(self.b)


def generate_batched(backend, prompts: list[list[int]], max_tokens: int | list[int], *,
                     ignore_eos: bool = False) -> list[Generation]:
    """Greedy; `max_tokens` for all, or one each. Sequence k holds prompt k."""
    import llama_cpp

    llm = backend._require()
    n = len(prompts)
    if n == 0:
        return []
    ctx = llm._ctx.ctx
    n_seq_max = llama_cpp.llama_n_seq_max(ctx)
    if n > n_seq_max:
        raise EdgepickError(f"{n} concurrent requests need a model loaded for {n} sequences "
                            f"(loaded for {n_seq_max})")
    per_seq = llama_cpp.llama_n_ctx_seq(ctx) if n_seq_max > 1 else llm.n_ctx()
    for p in prompts:
        if len(p) + 1 > per_seq:
            raise EdgepickError(f"prompt of {len(p)} tokens does not fit the context of {per_seq}")
    budgets = max_tokens if isinstance(max_tokens, list) else [max_tokens] * n
    limits = [min(m, per_seq - len(p)) for m, p in zip(budgets, prompts)]
    vocab = llm._model.vocab
    step = backend._stepper()  # greedy arg-max, as in single-sequence generate
    n_batch = max(llm.context_params.n_batch, n)
    batch = _Batch(n_batch, n)
    mem = llama_cpp.llama_get_memory(ctx)
    times: list[list[float]] = [[] for _ in prompts]
    outs: list[list[int]] = [[] for _ in prompts]
    prefill_s: list[float | None] = [None] * n
    done = [False] * n
    pos = [len(p) for p in prompts]

    def decode() -> None:
        rc = llama_cpp.llama_decode(ctx, batch.b)
        if rc != 0:
            raise EdgepickError(f"llama_decode failed with code {rc} (batch of {batch.b.n_tokens})")

    def take(k: int, idx: int, t0: float) -> None:
        tok = step.argmax(ctx, idx)
        now = time.perf_counter() - t0
        if not ignore_eos and llama_cpp.llama_vocab_is_eog(vocab, tok):
            done[k] = True
            return
        outs[k].append(tok)
        times[k].append(now)
        if len(outs[k]) >= limits[k]:
            done[k] = True

    def flush(pending: list[tuple[int, int]], t0: float) -> None:
        decode()
        now = time.perf_counter() - t0
        for k, idx in pending:
            prefill_s[k] = now
            take(k, idx, t0)
        pending.clear()
        batch.clear()

    try:
        t0 = time.perf_counter()
        llama_cpp.llama_memory_clear(mem, True)
        backend.prompt_tokens_decoded += sum(len(p) for p in prompts)
        # Prefill: the prompts packed, in order, into batches; logits only at each prompt's end.
        pending: list[tuple[int, int]] = []  # (prompt, batch index) ending in this batch
        for k, p in enumerate(prompts):
            for j in range(len(p)):
                last = j == len(p) - 1
                idx = batch.add(p[j], j, k, last)
                if last:
                    pending.append((k, idx))
                if batch.b.n_tokens == n_batch:
                    flush(pending, t0)
        if batch.b.n_tokens:
            flush(pending, t0)
        # Decode: one token per unfinished sequence per step.
        while not all(done):
            batch.clear()
            active = []
            for k in range(n):
                if not done[k]:
                    active.append((k, batch.add(outs[k][-1], pos[k], k, True)))
                    pos[k] += 1
            decode()
            for k, idx in active:
                take(k, idx, t0)
    finally:
        batch.free()
        llama_cpp.llama_memory_clear(mem, True)
        llm.n_tokens = 0  # the single-sequence bookkeeping no longer matches the memory
    gens = []
    for k in range(n):
        finish = "length" if len(outs[k]) >= limits[k] else "stop"
        gens.append(Generation(text=backend.detokenize(outs[k]), prompt_tokens=len(prompts[k]),
                               generated_tokens=len(outs[k]), token_times=times[k],
                               prefill_s=prefill_s[k], finish_reason=finish,
                               token_ids=outs[k]))
    return gens
