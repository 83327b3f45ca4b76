"""Concurrent requests in one llama.cpp context: one sequence per request, decoded together.

This is what a llama.cpp server does with parallel slots: every step puts one token of each
unfinished sequence into a single batch, so the weights are read once per step for all of them.
Prompts are packed into batches of up to n_batch tokens; a request's first token is sampled right
after the batch holding the end of its prompt, so requests later in the pack wait longer (their
TTFT includes the prefill of the ones before them), exactly as on a server receiving them at once.
Eval's groups (generate_packed, one shared cache) prefill a prefix common to several prompts once
(llama_cpp_prefix); bench's concurrent requests (generate_concurrent) prefill every prompt whole.
"""

from __future__ import annotations

import time

from edgepick.backends.base import Generation
from edgepick.backends.llama_cpp_prefix import PrefixCache, trivial_plan
from edgepick.errors import EdgepickError


def multi_sequence_context(llm, n_seq: int, shared: bool = False, spare: int = 0):
    """Replace the Llama's context by one holding `n_seq` sequences of n_ctx tokens each, or,
    `shared`, `n_seq` sequences in the one cache of n_ctx cells (llama-server's unified KV).
    `spare` more sequence ids (shared only: they cost no cells) hold resident prompt prefixes.

    The single-sequence context is freed first, so the process's memory high-water mark is that
    of the multi-sequence context, as it would be on a server sized for that concurrency."""
    import llama_cpp
    from llama_cpp import _internals

    params = type(llm.context_params).from_buffer_copy(llm.context_params)
    params.n_seq_max = n_seq + (spare if shared else 0)
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


def generate_packed(backend, prompts: list[list[int]], limits: list[int],
                    samplings: list[dict | None]) -> list[Generation]:
    """Groups decoded together: as many as the context's sequences, and with a shared cache no
    more than its cells hold (each prompt's own part plus its budget), so no group runs out.
    With the prefix cache the prompts go in token order, so prompts that begin alike share a
    group or follow one another (the last group's prompts stay resident)."""
    import llama_cpp

    ctx = backend._require()._ctx.ctx
    n_ids = llama_cpp.llama_n_seq_max(ctx)
    n_seq = backend.width or n_ids  # decoded together; the other ids hold resident prefixes
    cells = llama_cpp.llama_n_ctx(ctx) if n_ids > 1 and \
        llama_cpp.llama_n_ctx_seq(ctx) == llama_cpp.llama_n_ctx(ctx) else None
    cache = backend.prefix_cache()
    if cache is not None:
        cache.check(llama_cpp.llama_get_memory(ctx))
    order = sorted(range(len(prompts)), key=prompts.__getitem__) if cache else \
        list(range(len(prompts)))

    def fits(ix: list[int]) -> bool:
        ps, ls = [prompts[k] for k in ix], [limits[k] for k in ix]
        if cells is None:
            return True
        need = cache.plan(ps, ls, n_ids, cells).need if cache else \
            sum(len(p) + m for p, m in zip(ps, ls))
        return need <= cells

    out: list[Generation | None] = [None] * len(prompts)
    i = 0
    while i < len(order):
        j = i + 1
        while j < len(order) and j - i < n_seq and fits(order[i:j + 1]):
            j += 1
        group = order[i:j]
        gens = generate_batched(backend, [prompts[k] for k in group], [limits[k] for k in group],
                                samplings=[samplings[k] for k in group], cache=cache)
        for k, g in zip(group, gens):
            out[k] = g
        i = j
    return out


def generate_batched(backend, prompts: list[list[int]], max_tokens: int | list[int], *,
                     ignore_eos: bool = False, samplings: list[dict | None] | None = None,
                     cache: PrefixCache | None = None) -> list[Generation]:
    """`max_tokens` for all, or one each; `samplings`: each sequence's own sampler (its seed
    among the settings), None for greedy. With a `cache` a prompt's prefix held by a resident
    sequence or an earlier prompt of the group is copied, not prefilled (llama_cpp_prefix)."""
    import llama_cpp

    from edgepick.backends.llama_cpp_step import sampler_chain

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
    chains = [None if s is None else sampler_chain(s, backend.candidate.settings.seed, llm.n_vocab())
              for s in (samplings or [None] * n)]
    for chain, p in zip(chains, prompts):
        for t in p if chain is not None else ():  # the prompt counts for the repeat penalty
            llama_cpp.llama_sampler_accept(chain, t)
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
        tok = step.argmax(ctx, idx) if chains[k] is None else \
            int(llama_cpp.llama_sampler_sample(chains[k], ctx, idx))
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

    ok = False
    try:
        t0 = time.perf_counter()
        if cache is not None:
            cache.check(mem)
            plan = cache.plan(prompts, limits, n_seq_max, llama_cpp.llama_n_ctx(ctx))
            cache.take_residents(mem, plan, n_seq_max)
        else:
            llama_cpp.llama_memory_clear(mem, True)
            plan = trivial_plan(n)
        backend.prompt_tokens_decoded += sum(len(p) - r for p, r in zip(prompts, plan.reuse))
        # Prefill: each wave's prompts packed, in order, into batches; logits only at each
        # prompt's end. A wave ends decoded, so the next one's prefixes are there to copy.
        pending: list[tuple[int, int]] = []  # (prompt, batch index) ending in this batch
        for wave in range(max(plan.wave) + 1):
            for k, p in enumerate(prompts):
                if plan.wave[k] != wave:
                    continue
                if cache is not None:
                    cache.copy_from_group(mem, plan, k, len(p))
                for j in range(plan.reuse[k], len(p)):
                    last = j == len(p) - 1
                    idx = batch.add(p[j], j, plan.seq[k], last)
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
                    active.append((k, batch.add(outs[k][-1], pos[k], plan.seq[k], True)))
                    pos[k] += 1
            decode()
            for k, idx in active:
                take(k, idx, t0)
        ok = True
    finally:
        batch.free()
        for chain in chains:
            if chain is not None:
                llama_cpp.llama_sampler_free(chain)
        if cache is not None and ok and backend.keep_prefixes:
            cache.keep(mem, plan, prompts)
        else:
            if cache is not None:
                cache.forget()
            llama_cpp.llama_memory_clear(mem, True)
        llm.n_tokens = 0  # the single-sequence bookkeeping no longer matches the memory
    gens = []
    for k in range(n):
        finish = "length" if len(outs[k]) >= limits[k] else "stop"
        gens.append(Generation(text=backend.detokenize(outs[k]), prompt_tokens=len(prompts[k]),
                               generated_tokens=len(outs[k]), token_times=times[k],
                               prefill_s=prefill_s[k], finish_reason=finish,
                               token_ids=outs[k], cached_tokens=plan.reuse[k]))
    return gens
