"""Prompt prefixes prefilled once: several prompts that begin alike share one copy of the KV.

A tool-calling item's prompt is mostly its toolbox and system text, the same for the items of
one toolbox (the demo tool set: 87% of its prompt tokens are a prefix of another item's), and
prefill on a 2-core CPU is compute-bound, so decoding such prompts together gains nothing: only
not prefilling the shared part again does. As llama-server's `cache_prompt` keeps a slot's last
prompt, each sequence keeps its last prompt's KV between calls (`PrefixCache.resident`); a new
prompt takes the longest prefix any resident or earlier prompt of its group has in common with
it, copies it with `llama_memory_seq_cp` and prefills only the rest.

Only in a unified cache (one stream for every sequence, eval's `shared_kv`): there a copy adds
the sequence to the same cells (llama-kv-cache.cpp `seq_cp`, same stream: metadata only), so a
shared prefix costs its cells once. Across streams llama.cpp copies only whole sequences, and
bench's concurrent requests (separate streams) are meant to prefill cold. Not for a model with
sliding-window layers (their cache drops positions behind the window, so a prefix copied from a
longer sequence lacks cells the remainder attends to) nor for recurrent or hybrid memory (no
partial removal): there every prompt is prefilled whole, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# A shorter common prefix is not worth a prefill wave of its own (see Plan.wave): the chat
# template's opening alone is 3 tokens for every prompt.
MIN_REUSE = 8


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


def prefix_cache_for(llm, n_seq: int, shared: bool) -> "PrefixCache | None":
    """A cache for a context of `n_seq` sequences in one stream, or None where it cannot be."""
    import llama_cpp

    model = llm._model.model
    if n_seq < 2 or not shared or llama_cpp.llama_model_n_swa(model) > 0 \
            or llama_cpp.llama_model_is_recurrent(model) or llama_cpp.llama_model_is_hybrid(model):
        return None
    return PrefixCache()


@dataclass
class Plan:
    """Where each prompt of a group lives and what it reuses."""

    seq: list[int]  # its sequence id
    reuse: list[int]  # leading tokens whose KV is copied, not prefilled
    # ("r", seq id) a resident's prefix, ("p", index) an earlier prompt's of this group, or None
    source: list[tuple[str, int] | None]
    # prefill wave: a prompt copying from another of its group is prefilled after it
    wave: list[int]
    keep: list[int] = field(default_factory=list)  # residents left in place, oldest first
    need: int = 0  # cells the group and the kept residents occupy at most


def trivial_plan(n: int) -> Plan:
    return Plan(seq=list(range(n)), reuse=[0] * n, source=[None] * n, wave=[0] * n)


class Cells:
    """The unified cache's cells, mirrored: each one's position and the sequences holding it
    (llama-kv-cells.h). llama.cpp has no call that counts used cells, and residents that share
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

    def used_without(self, gone: set[int]) -> int:
        return sum(1 for _, seqs in self.cells if seqs - gone)


@dataclass
class PrefixCache:
    """Residents: seq id -> the prompt whose KV it holds at positions 0..len-1, oldest first.
    The context has spare sequence ids (multi_sequence_context) so that residents survive a
    group that uses every decoding slot; they go oldest first when ids or cells run short."""

    resident: dict[int, list[int]] = field(default_factory=dict)
    mirror: Cells = field(default_factory=Cells)

    def plan(self, prompts: list[list[int]], limits: list[int], n_seq: int,
             n_cells: int) -> Plan:
        p = self._plan(prompts, limits, n_seq, n_cells, self.resident)
        # residents too long to keep beside the group: then only the group shares
        ok = p.need <= n_cells and len(p.seq) == len(prompts)
        return p if ok else self._plan(prompts, limits, n_seq, n_cells, {})

    def _plan(self, prompts, limits, n_seq: int, n_cells: int, resident: dict) -> Plan:
        n = len(prompts)
        plan = trivial_plan(n)
        for j, p in enumerate(prompts):
            # at least the last prompt token is decoded: its logits give the first token
            best = MIN_REUSE - 1
            for s, toks in resident.items():
                k = min(common_prefix(p, toks), len(p) - 1)
                if k > best:
                    best, plan.source[j] = k, ("r", s)
            for i in range(j):
                k = min(common_prefix(p, prompts[i]), len(p) - 1)
                if k > best:
                    best, plan.source[j] = k, ("p", i)
            if plan.source[j] is not None:
                plan.reuse[j] = best
            if plan.source[j] and plan.source[j][0] == "p":
                plan.wave[j] = plan.wave[plan.source[j][1]] + 1
        sources = {src[1] for src in plan.source if src and src[0] == "r"}
        own = sum(len(p) - r + m for p, r, m in zip(prompts, plan.reuse, limits))
        keep = list(resident)
        kept = lambda: own + self.mirror.used_without(set(self.resident) - set(keep))  # noqa: E731
        while keep and (len(keep) + n > n_seq or kept() > n_cells):
            drop = next((s for s in keep if s not in sources), None)
            if drop is None:
                break
            keep.remove(drop)
        free = [s for s in range(n_seq) if s not in keep]
        plan.seq, plan.keep, plan.need = free[:n], keep, kept()
        return plan

    def forget(self) -> None:
        self.resident.clear()
        self.mirror = Cells()

    def check(self, mem) -> None:
        """Forget every resident when the memory no longer holds them as recorded (a
        one-sequence generate clears the whole cache)."""
        import llama_cpp

        for s, toks in self.resident.items():
            if llama_cpp.llama_memory_seq_pos_min(mem, s) != 0 or \
                    llama_cpp.llama_memory_seq_pos_max(mem, s) != len(toks) - 1:
                self.forget()
                return

    def take_residents(self, mem, plan: Plan, n_seq: int) -> None:
        """Before prefill: empty every sequence but the kept residents (the rest of the
        residents, anything a caller left), then copy the residents' prefixes to the prompts
        that reuse them (in one stream: the prompt joins the same cells)."""
        import llama_cpp

        for s in range(n_seq):
            if s not in plan.keep:
                llama_cpp.llama_memory_seq_rm(mem, s, -1, -1)
                self.mirror.rm(s)
        self.resident = {s: self.resident[s] for s in plan.keep}
        for j, src in enumerate(plan.source):
            if src and src[0] == "r":
                llama_cpp.llama_memory_seq_cp(mem, src[1], plan.seq[j], 0, plan.reuse[j])
                self.mirror.cp(src[1], plan.seq[j], 0, plan.reuse[j])

    def copy_from_group(self, mem, plan: Plan, j: int, n_tokens: int) -> None:
        """Before prompt j's wave: its prefix from the earlier prompt of its group; then its
        own `n_tokens` cells are about to be filled."""
        import llama_cpp

        src = plan.source[j]
        if src and src[0] == "p":
            llama_cpp.llama_memory_seq_cp(mem, plan.seq[src[1]], plan.seq[j], 0, plan.reuse[j])
            self.mirror.cp(plan.seq[src[1]], plan.seq[j], 0, plan.reuse[j])
        self.mirror.add(plan.seq[j], plan.reuse[j], n_tokens)

    def keep(self, mem, plan: Plan, prompts: list[list[int]]) -> None:
        """After the group: each sequence keeps its prompt, not what it generated, as the
        newest resident."""
        import llama_cpp

        for j, p in enumerate(prompts):
            llama_cpp.llama_memory_seq_rm(mem, plan.seq[j], len(p), -1)
            self.resident[plan.seq[j]] = list(p)
