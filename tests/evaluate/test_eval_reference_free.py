"""Items without a reference (sampled traffic served without a cloud, issue 29 item 1): they
load, count for the unacceptable rate, format compliance and output length, and are left out of
scores, gaps and badcases, which the result and the CLI say in one line."""

from __future__ import annotations

import json

import pytest

from edgepick.errors import EdgepickError
from edgepick.evaluate.items import load_eval_set
from edgepick.evaluate.stage import EvalRequest, run


def _write(tmp_path, rows, name="set.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _rows():
    # 6 items with a reference, 4 sampled from traffic without one (one of them critical)
    with_ref = [{"id": f"r{i}", "task": "yes_no", "prompt": f"r{i}", "reference": "yes"}
                for i in range(6)]
    free = [{"id": f"t{i}", "task": "yes_no", "prompt": f"t{i}", "reference": None,
             "critical": i == 0} for i in range(4)]
    return with_ref + free


def answer(prompt, seed):
    return {"r0": "no", "t0": "no", "t1": "", "t2": "perhaps", "t3": "yes"}.get(prompt, "yes")


def test_a_null_reference_loads_and_other_checks_hold(tmp_path):
    path = _write(tmp_path, [
        {"id": "a", "task": "qa", "prompt": "q", "reference": None},
        {"id": "b", "task": "qa", "prompt": "q", "reference": "x"},
        {"id": "c", "task": "math", "prompt": "q", "reference": "many"},  # still refused
        {"id": "d", "task": "classification", "prompt": "q", "reference": None},  # no labels
        {"id": "e", "task": "extraction", "prompt": "q", "reference": None,
         "schema": {"type": "nope"}},  # a broken schema is still refused
        {"id": "f", "task": "extraction", "prompt": "q", "reference": None,
         "schema": {"type": "object"}},
    ])
    items, problems = load_eval_set(path)
    assert [it.id for it in items] == ["a", "b", "f"]
    assert [it.reference_free for it in items] == [True, False, True]
    assert {(p.line, p.field) for p in problems} == {(3, "reference"), (4, "labels"),
                                                     (5, "schema")}
    # the mark is not stored: an item with a reference dumps exactly as before
    assert "reference_free" not in items[1].model_dump()


def test_reference_free_items_count_only_for_the_reference_free_figures(scripted, tmp_path):
    make, store = scripted
    ref, cand = make("ref", lambda p, s: "yes"), make("cand", answer)
    res = run(EvalRequest(data=_write(tmp_path, _rows()), reference=ref, candidates=[cand]),
              store)
    c = res.candidates[0]
    assert res.n_items == 10 and res.reference_free == 4
    assert res.reference_free_note == (
        "4/10 item(s) without a reference: counted for unacceptable rate, format compliance, "
        "output length; left out of score, gap to the reference, badcases per 1000")
    # scores, gaps and badcases: the 6 items with a reference only
    assert c.overall.n == 6 and c.per_task["yes_no"].n == 6
    assert c.overall.score == pytest.approx(5 / 6)
    assert [b.item_id for b in c.badcases] == ["r0"]
    # the unacceptable rate over all 10: t1 empty, t2 no answer; t0 (critical, "no") is not
    # critical_wrong, since nobody knows the right answer
    assert (c.unacceptable.count, c.unacceptable.n) == (2, 10)
    assert c.unacceptable.reasons == {"empty": 1, "no_answer": 1}
    by_id = {o.item_id: o for o in c.items}
    assert len(by_id) == 10
    assert [by_id[f"t{i}"].format_ok for i in range(4)] == [True, False, False, True]
    assert all(by_id[f"t{i}"].reference_free and not by_id[f"t{i}"].badcase for i in range(4))
    assert not by_id["r0"].reference_free and by_id["r0"].badcase
    # format compliance and output length read every stored item (decide/adapters.py)
    from edgepick.decide.adapters import _format_figure, output_lengths

    ce = c.model_dump(mode="json")
    fmt = _format_figure(ce, None)
    assert (fmt.count, fmt.n) == (8, 10)
    assert output_lengths(ce, None)


def test_the_cli_says_what_was_left_out(scripted, tmp_path):
    from edgepick.cli.cmd_eval import _print_human
    from edgepick.cli.output import console

    make, store = scripted
    ref, cand = make("ref", lambda p, s: "yes"), make("cand", answer)
    res = run(EvalRequest(data=_write(tmp_path, _rows()), reference=ref, candidates=[cand]),
              store)
    with console.capture() as cap:
        _print_human(res, 0)
    out = " ".join(cap.get().split())
    assert "4/10 item(s) without a reference" in out and "left out of score" in out


def test_sequential_looks_fall_back_to_fixed_n_and_say_so(scripted, tmp_path):
    make, store = scripted
    ref, cand = make("ref", lambda p, s: "yes"), make("cand", answer)
    res = run(EvalRequest(data=_write(tmp_path, _rows()), reference=ref, candidates=[cand],
                          sequential=True), store)
    assert res.sequential is None and res.candidates[0].unacceptable.n == 10
    assert res.reference_free_note.endswith("(fixed N: sequential looks need scores)")


def test_a_set_with_every_reference_has_no_note(scripted, tmp_path):
    make, store = scripted
    ref, cand = make("ref", lambda p, s: "yes"), make("cand", answer)
    res = run(EvalRequest(data=_write(tmp_path, _rows()[:6]), reference=ref, candidates=[cand]),
              store)
    assert res.reference_free == 0 and res.reference_free_note is None
    assert not any(o.reference_free for o in res.candidates[0].items)


def test_a_set_without_any_reference_is_refused_in_one_line(scripted, tmp_path):
    make, store = scripted
    ref, cand = make("ref", lambda p, s: "yes"), make("cand", answer)
    with pytest.raises(EdgepickError, match="every item is without a reference"):
        run(EvalRequest(data=_write(tmp_path, _rows()[6:]), reference=ref, candidates=[cand]),
            store)
