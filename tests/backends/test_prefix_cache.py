"""Eval's groups prefill a prompt prefix shared by several prompts once (llama_cpp_prefix)."""

import pytest

from edgepick.backends.llama_cpp_prefix import MIN_REUSE, PrefixCache

TOOLBOX = ("You can call the following tools. Each is described by one JSON line:\n"
           + "\n".join(f'{{"name": "tool_{i}", "description": "Look up record {i} of the '
                       f'inventory by its id.", "parameters": {{"id": "string"}}}}'
                       for i in range(6))
           + "\nTo call a tool, reply with only one JSON object and no other text.")
QUESTIONS = ["What is in record 3?", "Find record 5 for me.", "Is record 1 still in stock?"]


def test_plan_reuses_the_longest_prefix_of_a_resident_or_an_earlier_prompt():
    cache = PrefixCache()
    base = list(range(100))
    a, b, c = base + [1000, 1001], base[:60] + [2000, 2001], [7] * 30
    plan = cache.plan([a, b, c], [4, 4, 4], n_seq=6, n_cells=1000)
    assert plan.reuse == [0, 60, 0] and plan.source == [None, ("p", 0), None]
    assert plan.wave == [0, 1, 0]  # b is prefilled after a, from a's cells
    assert plan.need == len(a) + 2 + 3 * 4 + len(c)  # b's 60 shared cells counted once
    # a resident prompt (kept from an earlier group) is a source too, and its cells count
    cache.resident, cache.mirror.cells = {5: a}, [(p, {5}) for p in range(len(a))]
    plan = cache.plan([base + [3000]], [4], n_seq=6, n_cells=1000)
    assert plan.reuse == [100] and plan.source == [("r", 5)] and plan.keep == [5]
    assert plan.seq == [0] and plan.need == len(a) + 1 + 4
    # too few cells to keep it beside the group: it goes, and nothing is reused
    plan = cache.plan([base + [3000]], [4], n_seq=6, n_cells=105)
    assert plan.reuse == [0] and plan.keep == []
    # the last prompt token is always decoded (its logits give the first token)
    fresh = PrefixCache()
    assert fresh.plan([a, list(a)], [4, 4], 6, 1000).reuse == [0, len(a) - 1]
    assert fresh.plan([a[:MIN_REUSE - 1] + [1], a[:MIN_REUSE - 1] + [2]], [4, 4], 6,
                      1000).reuse == [0, 0]


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


def _run(model: str, groups: list[list[list[int]]], reuse: bool, monkeypatch, keep=False):
    from edgepick.backends import get_backend
    from edgepick.backends.base import GenRequest, LoadOptions
    from edgepick.backends.llama_cpp import LlamaCppBackend
    from edgepick.records.candidate import Candidate, RuntimeSettings

    monkeypatch.setattr(LlamaCppBackend, "reuse_prefixes", reuse)
    monkeypatch.setattr(LlamaCppBackend, "keep_prefixes", keep)
    b = get_backend("llama_cpp")
    b.load(Candidate(model=model, settings=RuntimeSettings(threads=2, n_ctx=1024)),
           LoadOptions(n_seq=max(len(g) for g in groups), shared_kv=True))
    try:
        gens = [b.generate_many([GenRequest(prompt=p, max_tokens=12) for p in g])
                for g in groups]
        return [g for gs in gens for g in gs], b.prompt_tokens_decoded
    finally:
        b.unload()


@pytest.mark.parametrize("keep", [False, True], ids=["in-group", "resident"])
def test_a_shared_prefix_is_prefilled_once_with_the_same_greedy_outputs(smollm2_q4_1, prompts,
                                                                        monkeypatch, keep):
    from edgepick.backends.llama_cpp_prefix import common_prefix

    a, b, c = prompts
    shared = common_prefix(a, b)
    assert shared > 100 and common_prefix(a, c) == shared  # the system turn
    # two prompts decoded together; kept resident, then a third in a later call on the same
    # loaded model. (The three in one group flip a near-tie: docs/evaluate.md)
    groups = [[a, b], [c]] if keep else [[a, b]]
    cold, n_cold = _run(smollm2_q4_1, groups, False, monkeypatch, keep)
    warm, n_warm = _run(smollm2_q4_1, groups, True, monkeypatch, keep)
    mine = [a, b, c][:len(warm)]
    assert n_cold == sum(len(p) for p in mine)
    assert n_warm == len(a) + sum(len(p) - shared for p in mine[1:])
    # a group goes in token order: whichever is first is prefilled whole
    assert sorted(g.cached_tokens for g in warm) == [0] + [shared] * (len(mine) - 1)
    assert [g.prompt_tokens for g in warm] == [len(p) for p in mine]
    # the copied KV is the KV prefilled: greedy outputs are the same tokens (docs/evaluate.md)
    assert [g.token_ids for g in warm] == [g.token_ids for g in cold]
