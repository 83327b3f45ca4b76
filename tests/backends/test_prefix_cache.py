"""Eval's requests prefill a prompt prefix shared by several prompts once (llama_cpp_prefix,
llama_cpp_stream)."""

import pytest


TOOLBOX = ("You can call the following tools. Each is described by one JSON line:\n"
           + "\n".join(f'{{"name": "tool_{i}", "description": "Look up record {i} of the '
                       f'inventory by its id.", "parameters": {{"id": "string"}}}}'
                       for i in range(6))
           + "\nTo call a tool, reply with only one JSON object and no other text.")
QUESTIONS = ["What is in record 3?", "Find record 5 for me.", "Is record 1 still in stock?"]


def test_cells_count_a_shared_prefix_once():
    from edgepick.backends.llama_cpp_prefix import Cells

    cells = Cells()
    cells.add(0, 0, 100)
    cells.cp(0, 1, 0, 60)  # sequence 1 joins the first 60 cells
    cells.add(1, 60, 70)
    assert cells.used() == 110
    cells.rm(0)  # the shared 60 stay: sequence 1 holds them
    assert cells.used() == 70
    cells.rm(1)
    assert cells.used() == 0


@pytest.fixture(scope="module")
def prompts(smollm2_q4_1):
    from edgepick.backends import get_backend
    from edgepick.records.candidate import Candidate, RuntimeSettings

    b = get_backend("llama_cpp")
    b.load(Candidate(model=smollm2_q4_1, settings=RuntimeSettings(threads=2, n_ctx=1024)))
    try:
        return [b._prompt_tokens([{"role": "system", "content": TOOLBOX},
                                  {"role": "user", "content": q}], True) for q in QUESTIONS]
    finally:
        b.unload()


def _run(model: str, prompts: list[list[int]], reuse: bool, monkeypatch, slots: int):
    from edgepick.backends import get_backend
    from edgepick.backends.base import GenRequest, LoadOptions
    from edgepick.backends.llama_cpp import LlamaCppBackend
    from edgepick.records.candidate import Candidate, RuntimeSettings

    monkeypatch.setattr(LlamaCppBackend, "reuse_prefixes", reuse)
    b = get_backend("llama_cpp")
    b.load(Candidate(model=model, settings=RuntimeSettings(threads=2, n_ctx=1024)),
           LoadOptions(n_seq=slots, shared_kv=True))
    heard = []
    try:
        gens = b.generate_many([GenRequest(prompt=p, max_tokens=12) for p in prompts],
                               lambda k, g: heard.append(k))
        assert sorted(heard) == list(range(len(prompts)))  # each as it finished
        return gens, b.prompt_tokens_decoded
    finally:
        b.unload()


@pytest.mark.parametrize("slots", [2, 3], ids=["queued", "together"])
def test_a_shared_prefix_is_prefilled_once(smollm2_q4_1, prompts, monkeypatch, slots):
    from edgepick.backends.llama_cpp_prefix import MIN_REUSE, common_prefix

    a, b, c = prompts
    shared = common_prefix(a, b)
    assert shared > 100 and common_prefix(a, c) == shared >= MIN_REUSE  # the system turn
    # two slots: the third waits for one and copies from the one still in the cache
    cold, n_cold = _run(smollm2_q4_1, prompts, False, monkeypatch, slots)
    warm, n_warm = _run(smollm2_q4_1, prompts, True, monkeypatch, slots)
    assert n_cold == sum(len(p) for p in prompts)
    assert n_warm == n_cold - 2 * shared
    # the requests go in token order: whichever is first is prefilled whole
    assert sorted(g.cached_tokens for g in warm) == [0, shared, shared]
    assert [g.prompt_tokens for g in warm] == [len(p) for p in prompts]
    # the outputs themselves can differ where a near-tie flips (the rest is prefilled in other
    # batches, summed in another order, as decoding together does): the KV is checked below


def _last_logits(backend, parts: list[tuple[int, list[int], int]], copy=None):
    """Prefill each (sequence, tokens, first position) in turn, after `copy` = (src, dst, n)
    once the first is in; the logits of the last token."""
    import llama_cpp
    import numpy as np

    from edgepick.backends.llama_cpp_batched import _Batch

    ctx = backend._require()._ctx.ctx
    mem = llama_cpp.llama_get_memory(ctx)
    llama_cpp.llama_memory_clear(mem, True)
    batch = _Batch(1024, 2)
    try:
        for n, (seq, toks, p0) in enumerate(parts):
            if n == 1 and copy:
                llama_cpp.llama_memory_seq_cp(mem, copy[0], copy[1], 0, copy[2])
            batch.clear()
            for j, t in enumerate(toks):
                batch.add(t, p0 + j, seq, j == len(toks) - 1)
            assert llama_cpp.llama_decode(ctx, batch.b) == 0
        return np.array(backend._stepper().logits_row(ctx, batch.b.n_tokens - 1))
    finally:
        batch.free()
        llama_cpp.llama_memory_clear(mem, True)


def test_a_copied_prefix_gives_the_logits_of_the_prompt_prefilled_whole(smollm2_q4_1, prompts):
    from edgepick.backends import get_backend
    from edgepick.backends.base import LoadOptions
    from edgepick.backends.llama_cpp_prefix import common_prefix
    from edgepick.records.candidate import Candidate, RuntimeSettings

    a, b, c = prompts
    n = common_prefix(a, b)
    be = get_backend("llama_cpp")
    be.load(Candidate(model=smollm2_q4_1, settings=RuntimeSettings(threads=2, n_ctx=1024)),
            LoadOptions(n_seq=2, shared_kv=True))
    try:
        whole = _last_logits(be, [(0, b, 0)])
        copied = _last_logits(be, [(0, a, 0), (1, b[n:], n)], copy=(0, 1, n))
        other = _last_logits(be, [(0, c, 0)])
    finally:
        be.unload()
    # measured 0.44-0.53 apart against 6-9 between different prompts (docs/evaluate.md)
    assert abs(copied - whole).max() < abs(other - whole).max() / 4


def test_items_wait_for_cells_and_every_one_finishes(smollm2_q4_1, prompts):
    """A cache too small for every prompt at once: the next item takes a slot only when what
    it may need fits beside the others, and each is kept as it finishes."""
    from edgepick.backends import get_backend
    from edgepick.backends.base import GenRequest, LoadOptions
    from edgepick.records.candidate import Candidate, RuntimeSettings

    n_ctx = max(len(p) for p in prompts) + 64
    be = get_backend("llama_cpp")
    be.load(Candidate(model=smollm2_q4_1, settings=RuntimeSettings(threads=2, n_ctx=n_ctx)),
            LoadOptions(n_seq=3, shared_kv=True))
    heard: list[int] = []
    try:
        short = [GenRequest(prompt=[{"role": "user", "content": f"Count to {k}."}],
                            max_tokens=24, chat=True) for k in range(3, 7)]
        reqs = [GenRequest(prompt=p, max_tokens=48) for p in prompts] + short
        gens = be.generate_many(reqs, lambda k, g: heard.append(k))
    finally:
        be.unload()
    assert sorted(heard) == list(range(len(reqs)))
    assert all(g is not None and 0 < g.generated_tokens <= r.max_tokens
               for g, r in zip(gens, reqs))
    assert [g.prompt_tokens for g in gens[:3]] == [len(p) for p in prompts]
