"""What the canary may say about each figure it watches: `worse` (the interval shows the new
version worse than the previous one), `not_worse` (the interval excludes worse), or
`undetermined` (too few requests to say either), with how many more would settle it, as decide
says of a gate (evaluate/intervals.py).

A rate (5xx errors, unacceptable sampled outputs, unacceptable probe answers) is worse when the
new version's 95 % Wilson interval lies wholly above the previous version's, and not worse when
it lies wholly at or below the previous version's upper bound: the line "worse" would cross. TTFT
P99 is not worse when a distribution-free 95 % upper bound of the new P99 (an order statistic:
with n requests the k-th slowest, k from the binomial law of how many fall under the true P99)
is within `latency_tolerance` times the previous P99; that bound exists from 368 requests on
(1 - 0.99^368 ≥ 0.975). A figure the previous version never measured cannot be compared.

The probe's answers pair up (both versions answer the same items), so the probe is also worse
when more items score lower on the new version than higher, beyond chance: an exact one-sided
sign test on the items whose score changed (McNemar's exact test on scores), at the same 2.5 %.
A small model fails many items either way (SmolLM2-135M at Q8_0: 7 of 16 demo answers
unacceptable, its Q2_K 10 of 16: the rates' intervals overlap), yet the Q2_K build scored lower
on 9 of those 16 items and higher on 1 (p = 0.011).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from edgepick.evaluate.intervals import items_to_settle_rate, wilson

State = Literal["worse", "not_worse", "undetermined"]
P99 = 0.99
ONE_SIDED = 0.025  # each side of a 95 % interval
P99_LEAST = math.ceil(math.log(ONE_SIDED) / math.log(P99))  # 368: the slowest one bounds P99


@dataclass
class Judgement:
    figure: str  # error_rate | unacceptable_rate | probe | ttft_p99 | memory
    state: State
    detail: str
    more: int | None = None  # undetermined: more requests (or probe answers) that would settle it

    def line(self) -> str:
        if self.state == "worse":
            return f"{self.figure}: {self.detail}"
        if self.state == "not_worse":
            return f"{self.figure}: not worse, {self.detail}"
        tail = f"; about {self.more} more would settle it" if self.more else ""
        return f"{self.figure}: undetermined, {self.detail}{tail}"


def rate(figure: str, k_new: float, n_new: float, k_old: float, n_old: float, least: int,
         unit: str) -> Judgement:
    k_new, n_new, k_old, n_old = int(k_new), int(n_new), int(k_old), int(n_old)
    if n_old < least:
        return Judgement(figure, "undetermined", f"the previous version had {n_old} {unit} "
                         f"before the switch, {least} are needed to compare with")
    lo_old, hi_old = wilson(k_old, n_old)
    shown = (f"{k_new}/{n_new} {unit}" + (f" ({k_new / n_new:.1%})" if n_new else "")
             + f" against {k_old}/{n_old} ({k_old / n_old:.1%}, up to {hi_old:.1%})")
    lo_new, hi_new = wilson(k_new, n_new)
    if n_new >= least and lo_new > hi_old:
        return Judgement(figure, "worse", f"{k_new / n_new:.1%} (95% interval from {lo_new:.1%})"
                         f" against {k_old / n_old:.1%} (up to {hi_old:.1%})")
    if n_new >= least and hi_new <= hi_old:
        return Judgement(figure, "not_worse", shown)
    # the observed rate held while more come in: how many in all clear the previous upper bound
    total = items_to_settle_rate(k_new, max(n_new, 1), hi_old) if n_new else \
        items_to_settle_rate(0, 1, hi_old)
    if total is None:
        return Judgement(figure, "undetermined", shown + "; no number of requests settles it "
                         "at this rate")
    return Judgement(figure, "undetermined", shown, max(total, least) - n_new)


def _p99_upper_rank(n: int) -> int | None:
    """The rank k (1-based, from the fastest) whose observation is a 95 % upper bound of the
    P99 of n requests: the smallest k with P(Binomial(n, 0.99) ≥ k) ≤ 0.025; None below 368."""
    if n < P99_LEAST:
        return None
    tail, term, k = 0.0, P99 ** n, n  # term: P(exactly k under the P99)
    while k > 0:
        if tail + term > ONE_SIDED:
            return k + 1
        tail += term
        term *= k / (n - k + 1) * ((1 - P99) / P99)
        k -= 1
    return 1


def _at_rank(buckets: list[tuple[float, float]], k: int) -> float:
    """The upper edge of the histogram bucket holding the k-th fastest observation."""
    for le, count in buckets:
        if count >= k:
            return le
    return math.inf


def ttft(new_buckets: list[tuple[float, float]], n_new: float, new_p99: float | None,
         old_p99: float | None, n_old: float, least: int, tolerance: float) -> Judgement:
    n_new, n_old = int(n_new), int(n_old)
    if n_old < least or not old_p99:
        return Judgement("ttft_p99", "undetermined", f"the previous version had {n_old} timed "
                         f"requests before the switch, {least} are needed to compare with")
    limit = old_p99 * tolerance
    now = f"{new_p99 * 1000:.0f} ms" if new_p99 else "not measured"
    if n_new >= least and new_p99 and new_p99 > limit:
        return Judgement("ttft_p99", "worse", f"{now} against {old_p99 * 1000:.0f} ms "
                         f"(× {tolerance:g} allowed)")
    k = _p99_upper_rank(n_new)
    if k is None:
        return Judgement("ttft_p99", "undetermined", f"{now} over {n_new} requests against "
                         f"{old_p99 * 1000:.0f} ms: a 95% bound of a P99 needs {P99_LEAST}",
                         P99_LEAST - n_new)
    bound = _at_rank(new_buckets, k)
    shown = (f"{now}, 95% bound {bound * 1000:.0f} ms over {n_new} requests, against "
             f"{old_p99 * 1000:.0f} ms (× {tolerance:g} allowed)")
    if bound <= limit:
        return Judgement("ttft_p99", "not_worse", shown)
    return Judgement("ttft_p99", "undetermined", shown + ": the bound lies above the limit")


def memory(peak: float, old: float, tolerance: float) -> Judgement | None:
    """None when the engine reports no memory (nothing to watch)."""
    if not old or not peak:
        return None
    shown = (f"{peak / 2**20:.0f} MiB against {old / 2**20:.0f} MiB (engine anonymous memory "
             f"and model file; × {tolerance:g} allowed)")
    return Judgement("memory", "worse" if peak > old * tolerance else "not_worse", shown)


def sign_test(worse: int, better: int) -> float:
    """P(at least `worse` of the changed items went down) if a change were as likely up as down."""
    n = worse + better
    return sum(math.comb(n, k) for k in range(worse, n + 1)) / 2 ** n if n else 1.0


def paired(was: list[tuple[str, float, str]], now: list[tuple[str, float, str]]
           ) -> tuple[State, str]:
    """Over the items both probes answered, matched by id: `worse` beyond chance,
    `undetermined` when more went down than up but not beyond chance, else `not_worse`; and
    what was seen."""
    before = {i: sc for i, sc, _ in was}
    pairs = [(before[i], sc, i, text) for i, sc, text in now if i in before]
    down = [(i, text) for b, a, i, text in pairs if a < b - 1e-9]
    up = sum(a > b + 1e-9 for b, a, _, _ in pairs)
    p = sign_test(len(down), up)
    seen = (f"{len(down)} of {len(pairs)} items scored lower, {up} higher "
            f"(sign test p = {p:.3g})")
    if p < ONE_SIDED and down:  # quote what went down
        seen += "; e.g. " + "; ".join(f"{i}: {text}" for i, text in down[:3])
    if p < ONE_SIDED and down:
        return "worse", seen
    return ("undetermined" if len(down) > up else "not_worse"), seen
