"""Eval's requests through the context's decoding slots, continuously, as llama-server's slots.

Every step decodes one batch: one token of each sequence that is generating, then prompt tokens
of sequences still being prefilled, up to n_batch. A sequence that finishes leaves its slot and
its cells at once and the next request takes them in the same step, so a slot never waits for
the longest item of a group (a fixed group of 4 used 2.5 of its slots on average on the default
run's items). On a 2-core CPU decoding is nearly compute-bound, so what a step costs grows with
its tokens; the gain is the steps and their fixed cost saved, and for weights with a batched
matrix kernel (F16, Q8_0, Q4_0 here) wider steps that cost less per token (docs/evaluate.md).

In a unified cache (eval's `shared_kv`) the requests go in token order and a prompt takes the
longest prefix it shares with a sequence in the cache whose prompt is prefilled that far: that
prefix is copied (`llama_memory_seq_cp`, same stream: the cells gain a sequence id) and only the
rest is prefilled. A finished sequence is removed whole: decoding beside resident prompts was
measured slower than prefilling them again (docs/evaluate.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from edgepick.backends.base import Generation
from edgepick.backends.llama_cpp_batched import _Batch
from edgepick.backends.llama_cpp_prefix import MIN_REUSE, Cells, common_prefix
from edgepick.backends.llama_cpp_step import sampler_chain
from edgepick.errors import EdgepickError


@dataclass
class _Seq:
    k: int  # the request's index
    seq: int  # its sequence id
    prompt: list[int]
    limit: int
    chain: object | None  # its sampler; None: greedy arg-max
    reuse: int  # leading prompt tokens copied from another sequence
    t0: float
    fed: int = 0  # prompt tokens in the cache or in the batch being built
    done_prompt: int = 0  # prompt tokens whose KV is computed
    out: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    prefill_s: float | None = None
    idx: int | None = None  # its logits' index in the batch being decoded

    @property
    def need(self) -> int:
        """Cells it may still add: the prompt not yet fed, then its budget."""
        return len(self.prompt) - self.fed + self.limit - len(self.out)


def generate_stream(backend, prompts: list[list[int]], limits: list[int],
                    samplings: list[dict | None],
                    done: Callable[[int, Generation], None] | None = None) -> list[Generation]:
    """Each prompt's Generation, in order; `done(i, generation)` hears each as it finishes.
    Times (token_times, prefill_s) run from when the request took its slot."""
    import llama_cpp

    llm = backend._require()
    ctx = llm._ctx.ctx
    mem = llama_cpp.llama_get_memory(ctx)
    n_slots = backend.width or llama_cpp.llama_n_seq_max(ctx)
    n_cells = llama_cpp.llama_n_ctx(ctx)
    share = backend.shares_prefixes()
    # in token order, so prompts that begin alike are in the cache together
    order = sorted(range(len(prompts)), key=prompts.__getitem__) if share else \
        list(range(len(prompts)))
    n_batch = max(llm.context_params.n_batch, n_slots)
    batch = _Batch(n_batch, n_slots)
    step = backend._stepper()
    vocab = llm._model.vocab
    cells = Cells()
    active: list[_Seq] = []
    out: list[Generation | None] = [None] * len(prompts)
    seed = backend.candidate.settings.seed

    def admit() -> None:
        """Fill the free slots in queue order, while the next one's cells are free."""
        while order and len(active) < n_slots:
            k = order[0]
            p, src, reuse = prompts[k], None, 0
            for s in active if share else ():
                n = min(common_prefix(p, s.prompt), len(p) - 1)
                if n >= MIN_REUSE and n > reuse:
                    src, reuse = s, n
            if src is not None and src.done_prompt < reuse:
                return  # its prefix is in this step's batch: copy it after the decode
            need = len(p) - reuse + limits[k]
            if active and cells.used() + sum(s.need for s in active) + need > n_cells:
                return  # the next finish frees cells
            order.pop(0)
            seq = min(set(range(n_slots)) - {s.seq for s in active})
            chain = None if samplings[k] is None else \
                sampler_chain(samplings[k], seed, llm.n_vocab())
            for t in p if chain is not None else ():  # the prompt counts for repeat penalty
                llama_cpp.llama_sampler_accept(chain, t)
            s = _Seq(k, seq, p, limits[k], chain, reuse, time.perf_counter(), fed=reuse,
                     done_prompt=reuse)
            if src is not None:
                llama_cpp.llama_memory_seq_cp(mem, src.seq, seq, 0, reuse)
                cells.cp(src.seq, seq, 0, reuse)
            backend.prompt_tokens_decoded += len(p) - reuse
            active.append(s)

    def finish(s: _Seq, reason: str) -> None:
        active.remove(s)
        llama_cpp.llama_memory_seq_rm(mem, s.seq, -1, -1)
        cells.rm(s.seq)
        if s.chain is not None:
            llama_cpp.llama_sampler_free(s.chain)
            s.chain = None
        g = Generation(text=backend.detokenize(s.out), prompt_tokens=len(s.prompt),
                       generated_tokens=len(s.out), token_times=s.times, prefill_s=s.prefill_s,
                       finish_reason=reason, token_ids=s.out, cached_tokens=s.reuse)
        out[s.k] = g
        if done is not None:
            done(s.k, g)

    def fill() -> None:
        batch.clear()
        for s in active:  # one token of each generating sequence first
            s.idx = None
            if s.fed == len(s.prompt):
                pos = len(s.prompt) + len(s.out) - 1
                s.idx = batch.add(s.out[-1], pos, s.seq, True)
                cells.add(s.seq, pos, pos + 1)
        for s in active:  # then prompts, as many tokens as the batch has room for
            while s.fed < len(s.prompt) and batch.b.n_tokens < n_batch:
                last = s.fed == len(s.prompt) - 1
                i = batch.add(s.prompt[s.fed], s.fed, s.seq, last)
                cells.add(s.seq, s.fed, s.fed + 1)
                s.fed += 1
                if last:
                    s.idx = i

    def take(s: _Seq) -> None:
        tok = step.argmax(ctx, s.idx) if s.chain is None else \
            int(llama_cpp.llama_sampler_sample(s.chain, ctx, s.idx))
        now = time.perf_counter() - s.t0
        if s.prefill_s is None:
            s.prefill_s = now
        if llama_cpp.llama_vocab_is_eog(vocab, tok):
            return finish(s, "stop")
        s.out.append(tok)
        s.times.append(now)
        if len(s.out) >= s.limit:
            finish(s, "length")

    llama_cpp.llama_memory_clear(mem, True)
    try:
        admit()
        while active:
            fill()
            rc = llama_cpp.llama_decode(ctx, batch.b)
            if rc != 0:
                raise EdgepickError(f"llama_decode failed with code {rc} "
                                    f"(batch of {batch.b.n_tokens})")
            for s in list(active):
                s.done_prompt = s.fed
                if s.idx is not None:
                    take(s)
            admit()
    finally:
        batch.free()
        for s in active:
            if s.chain is not None:
                llama_cpp.llama_sampler_free(s.chain)
        llama_cpp.llama_memory_clear(mem, True)
        llm.n_tokens = 0  # the single-sequence bookkeeping no longer matches the memory
    return out
