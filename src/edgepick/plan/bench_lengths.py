"""The prompt lengths and answer length the plan's bench measures: the plan's own, plus the
scenario's context percentiles and output length (seed 000 §7.1: know the P50/P95/P99
of your context lengths), so the decision gates each figure at the product's length."""

from __future__ import annotations


def bench_lengths(prompt_lengths: list[int], gen_tokens: int, n_ctx: int,
                  scenario, context=None) -> tuple[list[int], int, list[str]]:
    """(prompt lengths, tokens to generate, notes). A scenario length that does not fit `n_ctx`
    with the answer is not measured, and said: the gates read at it stay unmeasured. `context`:
    one candidate's percentiles counted from `context_from` (plan/context_from.py)."""
    notes: list[str] = []
    gen = gen_tokens
    out = scenario.output_tokens
    if out is not None:
        gen = out.p95 or out.p50  # the answer the product writes, its long tail
    extra: set[int] = set()
    ctx = scenario.context_tokens or context
    if ctx is not None:
        extra = {n for n in (ctx.p50, ctx.p95, ctx.p99) if n is not None} - set(prompt_lengths)
    elif scenario.context_from:
        notes.append(f"bench: context_from {scenario.context_from} was not counted; "
                     "the bench runs at the plan's own lengths")
    fits = [n for n in sorted(extra) if n + gen <= n_ctx]
    for n in sorted(extra - set(fits)):
        notes.append(f"bench: a {n}-token prompt plus its {gen}-token answer does not fit n_ctx "
                     f"{n_ctx}; not measured, so the gates at that length stay unmeasured "
                     "(raise runtime.n_ctx)")
    # the plan's own lengths first, as before: the first is the base workload of the sweeps
    return list(dict.fromkeys(prompt_lengths)) + fits, gen, notes
