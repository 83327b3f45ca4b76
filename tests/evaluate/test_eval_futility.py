"""Stopping for futility (evaluate/futility.py): a candidate that fails a whole-candidate gate for
sure and has a task neither it nor the reference can serve stops, however the rest would go;
with a reference that serves the task it goes on as before."""

from __future__ import annotations

import pytest

from edgepick.evaluate.futility import surely_bad_side, surely_fails
from edgepick.evaluate.seq_gates import EvalGate
from edgepick.evaluate.stage import EvalRequest, run
from edgepick.records.evaluation import ItemOutcome

from scripted_engine import ScriptedBackend
from seq_sets import UNACCEPTABLE, classification, write_set, yes_no


@pytest.fixture
def data(tmp_path):
    """12 yes/no items and 40 classification items."""
    return write_set(tmp_path / "set.jsonl", yes_no(12) + classification(40))


def right(prompt, seed):
    return "yes" if prompt.startswith("yn") else "positive"


def bad_on_yes_no(prompt, seed):
    return "" if prompt.startswith("yn") else "positive"


def _run(data, ref, cand, store):
    return run(EvalRequest(data=data, reference=ref, candidates=[cand], sequential=True,
                           gates=[UNACCEPTABLE], look_items=8), store)


def test_a_candidate_that_cannot_change_the_decision_stops(scripted, data):
    make, store = scripted
    ref, cand = make("ref", bad_on_yes_no), make("cand", bad_on_yes_no)
    c = _run(data, ref, cand, store).sequential.candidates[0]
    # after one look of 8 per task: 8 unacceptable of 52 at the cap even if the other 36 are
    # fine fails on Wilson (low 8.0%), and yes/no is unacceptable on both sides, so no plan can
    # serve it. Classification (0 of n, which cannot pass 5% in 40 items) stops with it
    assert c.why.startswith("futile: fails unacceptable_rate and yes_no is served by neither")
    assert c.items == 16 and c.stopped_look == 1 and len(ScriptedBackend.calls) == 2 * 16


def test_a_reference_that_serves_the_task_keeps_the_candidate_going(scripted, data):
    make, store = scripted
    ref, cand = make("ref", right), make("cand", bad_on_yes_no)
    c = _run(data, ref, cand, store).sequential.candidates[0]
    # yes/no could go to the cloud: not futile, classification runs to its cap
    assert c.why == "cap" and c.items >= 40 + 8


def _flags(task, bad, n):
    return [ItemOutcome(item_id=f"{task}{i}", task=task, output="", finish_reason="stop", score=0.0,
                        correct=i >= bad, format_ok=True, badcase=i < bad,
                        unacceptable=["empty"] if i < bad else []) for i in range(n)]


def test_the_bounds_take_the_best_case_of_the_remaining_items():
    # 1 of 4 now; 1 of 17 at best is 5.9% > 5%: on the bad side whatever comes
    assert surely_bad_side(UNACCEPTABLE, _flags("qa", 1, 4), _flags("qa", 1, 4), 17)
    assert not surely_bad_side(UNACCEPTABLE, _flags("qa", 1, 4), _flags("qa", 1, 4), 20)
    # Wilson: 9 of 80 fails (low 6.0%), 7 of 80 does not (low 4.3%)
    assert surely_fails(UNACCEPTABLE, _flags("qa", 9, 9), 71)
    assert not surely_fails(UNACCEPTABLE, _flags("qa", 7, 7), 73)
    fmt = EvalGate(metric="format_compliance", direction="min", limit=0.9, scopes=("task",))
    # format_ok everywhere: never on the bad side of a minimum
    assert not surely_bad_side(fmt, _flags("qa", 0, 4), _flags("qa", 0, 4), 17)
