"""Eval under the deployment's sampling (issue 26 item 3): k samples per item with recorded
seeds, stored one by one; the item stays the unit of every rate and interval."""

from __future__ import annotations

import pytest

from edgepick.evaluate.intervals import per_item_rate, wilson
from edgepick.evaluate.stage import EvalRequest, run

from scripted_engine import ScriptedBackend
from seq_sets import write_set, yes_no

SAMPLING = {"temperature": 0.7, "top_p": 0.9, "top_k": 40, "repeat_penalty": 1.1}


@pytest.fixture
def data(tmp_path):
    return write_set(tmp_path / "set.jsonl", yes_no(20))


def same_every_sample(prompt, seed):
    return "" if int(prompt[2:]) % 4 == 0 else "yes"  # 5 of 20 items unacceptable


def test_three_identical_samples_give_the_interval_of_one(scripted, data):
    make, store = scripted
    ref, cand = make("ref", same_every_sample), make("cand", same_every_sample)
    one = run(EvalRequest(data=data, reference=ref, candidates=[cand]), store)
    three = run(EvalRequest(data=data, reference=ref, candidates=[cand], sampling=SAMPLING,
                            samples=3), store)
    a, b = one.candidates[0], three.candidates[0]
    assert (b.unacceptable.low, b.unacceptable.high) == pytest.approx(
        (a.unacceptable.low, a.unacceptable.high))
    assert b.unacceptable.n == 20 and b.unacceptable.rate == a.unacceptable.rate == 0.25
    ua, ub = a.per_task["yes_no"], b.per_task["yes_no"]
    assert (ub.badcases.low, ub.badcases.high) == pytest.approx((ua.badcases.low, ua.badcases.high))
    # each sample recorded with its seed, generated once and stored
    item = b.items[0]
    assert [s.seed for s in item.samples] == [42, 43, 44]
    assert three.samples == 3 and three.sampling == SAMPLING
    seeds = [s for _, _, s in ScriptedBackend.calls if s is not None]
    assert len(seeds) == 2 * 20 * 3 and set(seeds) == {42, 43, 44}


def test_independent_samples_narrow_the_interval_but_never_below_k_times_n():
    rates = [0.0, 1 / 3, 2 / 3, 1.0] * 10  # shares of unacceptable samples, 40 items, k = 3
    p, lo, hi = per_item_rate(rates, 3)
    assert p == pytest.approx(0.5)
    one_lo, one_hi = wilson(20, 40)  # as if each item had one sample
    all_lo, all_hi = wilson(60, 120)  # as if 120 independent outputs
    assert one_lo <= lo and hi <= one_hi
    assert lo <= all_lo + 1e-12 and all_hi - 1e-12 <= hi


def test_a_greedy_only_engine_says_so(scripted, data, monkeypatch):
    from edgepick.errors import EdgepickError

    make, store = scripted

    monkeypatch.setattr(ScriptedBackend, "capabilities", frozenset())  # declares no SAMPLING
    ref, cand = make("ref", same_every_sample), make("cand", same_every_sample)
    with pytest.raises(EdgepickError, match="generates greedily only"):
        run(EvalRequest(data=data, reference=ref, candidates=[cand], sampling=SAMPLING,
                        samples=2), store)
