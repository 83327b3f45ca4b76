"""Prompt prefixes prefilled once: several prompts that begin alike share one copy of the KV.

A tool-calling item's prompt is mostly its toolbox and system text, the same for the items of
one toolbox (the demo tool set: 87% of its prompt tokens are a prefix of another item's), and
prefill on a 2-core CPU is compute-bound, so decoding such prompts together gains nothing: only
not prefilling the shared part again does. Eval's requests go through the slots in token order
(llama_cpp_stream), so prompts that begin alike are in the cache together; a new one takes the
longest prefix it has in common with a sequence there, copies it with `llama_memory_seq_cp` and
prefills only the rest.

Only in a unified cache (one stream for every sequence, eval's `shared_kv`): there a copy adds
the sequence to the same cells (llama-kv-cache.cpp `seq_cp`, same stream: metadata only), so a
shared prefix costs its cells once. Across streams llama.cpp copies only whole sequences, and
bench's concurrent requests (separate streams) are meant to prefill cold. Not for a model with
sliding-window layers (their cache drops positions behind the window, so a prefix copied from a
longer sequence lacks cells the remainder attends to) nor for recurrent or hybrid memory (no
partial removal): there every prompt is prefilled whole.
"""

from __future__ import annotations

# A shorter common prefix is not worth waiting a step for: the chat template's opening alone is
# 3 tokens for every prompt.
MIN_REUSE = 8


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


def can_share(llm, n_seq: int, shared: bool) -> bool:
    """Whether prompts of a context of `n_seq` sequences can share prefixes (one stream, full
    attention, no recurrent state)."""
    import llama_cpp

    model = llm._model.model
    return n_seq >= 2 and shared and llama_cpp.llama_model_n_swa(model) == 0 \
        and not llama_cpp.llama_model_is_recurrent(model) \
        and not llama_cpp.llama_model_is_hybrid(model)


class Cells:
    """The unified cache's cells, mirrored: each one's position and the sequences holding it
    (llama-kv-cells.h). llama.cpp has no call that counts used cells, and sequences that share
    a prefix share its cells, so the sum of their lengths would overstate what they hold."""

    def __init__(self) -> None:
        self.cells: list[tuple[int, set[int]]] = []

    def add(self, seq: int, p0: int, p1: int) -> None:
        self.cells += [(p, {seq}) for p in range(p0, p1)]

    def cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        for pos, seqs in self.cells:
            if src in seqs and p0 <= pos < p1:
                seqs.add(dst)

    def rm(self, seq: int) -> None:
        for _, seqs in self.cells:
            seqs.discard(seq)
        self.cells = [c for c in self.cells if c[1]]

    def used(self) -> int:
        return len(self.cells)  # rm drops a cell no sequence holds
