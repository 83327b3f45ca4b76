"""Evaluation reports progress as the one `ProgressEvent` (issue 23 item 5): one count over
every model's generations, what the store already had counted at once."""

from __future__ import annotations

from edgepick.evaluate.stage import EvalRequest, run
from edgepick.progress import ProgressEvent

from scripted_engine import ScriptedBackend
from seq_sets import UNACCEPTABLE, write_set, yes_no


def yes(prompt, seed):
    return "yes"


def _events(req, store) -> list[tuple[int, int | None, str]]:
    ticks: list[ProgressEvent] = []
    run(req, store, ticks.append)
    assert all(isinstance(t, ProgressEvent) for t in ticks)
    return [(t.done, t.total, t.what) for t in ticks]


def test_fixed_n_counts_each_model_in_turn_and_a_rerun_starts_full(scripted, tmp_path):
    make, store = scripted
    ref, cand = make("ref", yes), make("cand", yes)
    req = EvalRequest(data=write_set(tmp_path / "s.jsonl", yes_no(3)), reference=ref,
                      candidates=[cand])
    assert _events(req, store) == [(0, 6, "ref"), (1, 6, "ref"), (2, 6, "ref"), (3, 6, "ref"),
                                   (3, 6, "cand"), (4, 6, "cand"), (5, 6, "cand"),
                                   (6, 6, "cand"), (6, 6, "done")]
    # every output is in the store: each model's count starts whole, nothing is generated
    assert _events(req, store) == [(3, 6, "ref"), (6, 6, "cand"), (6, 6, "done")]


def empty(prompt, seed):
    return ""  # unacceptable on every item: fails its gate on the first look


def test_sequential_looks_count_only_what_they_generate(scripted, tmp_path):
    make, store = scripted
    ref, cand = make("ref", yes), make("cand", empty)
    req = EvalRequest(data=write_set(tmp_path / "s.jsonl", yes_no(40)), reference=ref,
                      candidates=[cand], sequential=True, gates=[UNACCEPTABLE])
    events = _events(req, store)
    done = [d for d, _, _ in events]
    assert done == sorted(done)
    # counted against fixed N while running, the bar ends at the generations the looks made:
    # the reference's 4 and the failed candidate's 4, not the 80 fixed N would make
    assert all(total == 80 for _, total, _ in events[:-1])
    assert events[-1] == (8, 8, "done") and len(ScriptedBackend.calls) == 8
    # a rerun generates nothing: every output comes from the store, and the bar ends at 0
    assert _events(req, store)[-1] == (0, 0, "done")
