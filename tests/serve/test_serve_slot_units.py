"""Slot admission without an engine: a request takes `n` slots at once, first come first served,
and a timed-out or cancelled waiter gives nothing away."""

from __future__ import annotations

import asyncio
import time

import pytest

from edgepick.serve.pool.admission import Admission, slots_needed
from edgepick.serve.router_api import BadRequest, DeadlineExceeded, Overloaded


def run(coro):
    return asyncio.run(coro)


def test_slots_needed_counts_n_times_prompts():
    assert slots_needed({"messages": []}) == 1
    assert slots_needed({"n": 2, "messages": []}) == 2
    assert slots_needed({"n": 2, "prompt": ["a", "b"]}) == 4
    assert slots_needed({"n": 1, "prompt": [1, 2, 3]}) == 1  # token ids: one prompt
    assert slots_needed({"prompt": [[1, 2], [3]]}) == 2
    for bad in (0, -1, "2", 1.5, True):
        with pytest.raises(BadRequest):
            slots_needed({"n": bad})


def test_n_above_the_slots_is_refused_naming_the_limit():
    a = Admission(2, 4)
    with pytest.raises(BadRequest) as exc:
        a.enter(3)
    assert "--slots" in exc.value.message and exc.value.param == "n"
    assert a.admitted == 0


def test_a_two_slot_request_waits_for_both_and_is_not_overtaken():
    async def main():
        a = Admission(2, 4)
        far = time.monotonic() + 30
        a.enter(1)
        await a.acquire(far, 1)  # one slot busy
        a.enter(2)
        big = asyncio.create_task(a.acquire(far, 2))
        a.enter(1)
        small = asyncio.create_task(a.acquire(far, 1))
        await asyncio.sleep(0)
        # one slot is free, but the two-slot request came first: the small one waits behind it
        assert not big.done() and not small.done()
        assert (a.busy, a.waiting) == (1, 2)
        a.release(0.1, 1)
        await asyncio.wait_for(big, 5)
        assert (a.busy, a.running, a.waiting) == (2, 1, 1) and not small.done()
        a.release(0.1, 2)
        await asyncio.wait_for(small, 5)
        assert (a.busy, a.running) == (1, 1)
        a.release(0.1, 1)
        assert (a.busy, a.admitted) == (0, 0)
    run(main())


def test_a_waiter_that_times_out_leaves_no_trace_and_lets_the_next_in():
    async def main():
        a = Admission(2, 4)
        a.enter(1)
        await a.acquire(time.monotonic() + 30, 1)
        a.enter(2)
        with pytest.raises(DeadlineExceeded):
            await a.acquire(time.monotonic() + 0.05, 2)
        assert (a.admitted, a.busy) == (1, 1)
        a.enter(1)  # the head left: a one-slot request gets the free slot at once
        await asyncio.wait_for(a.acquire(time.monotonic() + 30, 1), 5)
        assert a.busy == 2
    run(main())


def test_capacity_counts_requests_not_slots():
    a = Admission(2, 1)
    for _ in range(3):
        a.enter(2)
    with pytest.raises(Overloaded):
        a.enter(1)
