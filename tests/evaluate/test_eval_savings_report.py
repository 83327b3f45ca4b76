"""What sequential evaluation saved, as the run prints it (evaluate/savings.py) and the report
shows it (report/savings_section.py): generations against fixed N, time saved, per candidate its
items, why it stopped and each gate's stopping look, and the candidates not evaluated at all."""

from __future__ import annotations

import json

import pytest

from edgepick.evaluate.savings import savings, savings_lines
from edgepick.evaluate.stage import EvalRequest, run
from edgepick.report import savings_section

from seq_sets import UNACCEPTABLE, classification, write_set, yes_no


@pytest.fixture
def data(tmp_path):
    return write_set(tmp_path / "set.jsonl", yes_no(20))


@pytest.fixture
def result(scripted, data):
    make, store = scripted
    ref, bad = make("ref", lambda p, s: "yes"), make("bad", lambda p, s: "")
    res = run(EvalRequest(data=data, reference=ref, candidates=[bad], sequential=True,
                          gates=[UNACCEPTABLE], not_evaluated={"big": "peak_memory_max"}), store)
    return res, store


def test_the_run_prints_generations_items_gates_and_who_was_left_out(result):
    res, _ = result
    s = savings(res)
    # ref and bad 4 items each; fixed N: ref, bad and the left-out "big" on all 20
    assert (s["generations"], s["fixed_generations"]) == (8, 60)
    assert s["generations_per_candidate"] == {"bad": (4, 20)}
    assert res.sequential.not_evaluated == {"big": "peak_memory_max"}
    assert set(res.sequential.seconds_per_generation) == {"ref", "bad"}
    assert s["time_saved_s"] is not None and s["time_saved_s"] >= 0
    text = "\n".join(savings_lines(res))
    assert "8 generations instead of 60 for fixed N (13%) over 1 looks" in text
    assert "bad: 4 of 20 items (settled); unacceptable_rate fail (look 1, 4 items) over all " \
        "tasks" in text
    # the cell's line names its task, its own gate and where it stopped
    assert "bad [yes_no]: 4 of 20 items; unacceptable_rate fail (look 1, 4 items); settled at " \
        "look 1" in text
    assert "big: not evaluated, 0 of 20 items (fails peak_memory_max" in text
    assert "generation saved" in text


def test_the_report_section_in_both_languages(result, tmp_path):
    res, store = result
    found = savings_section.latest_sequential(store, ["bad", "big"])
    assert found is not None and found.key == res.key
    assert savings_section.latest_sequential(store, ["someone else"]) is None
    out = tmp_path / "report"
    out.mkdir()
    for lg in ("en", "zh"):
        (out / f"report.{lg}.md").write_text("# report\n", encoding="utf-8")
        (out / f"report.{lg}.html").write_text("<html><body><h1>r</h1></body></html>",
                                               encoding="utf-8")
    touched = savings_section.append_to_report(out, found, ["en", "zh"])
    assert len(touched) == 4
    en = (out / "report.en.md").read_text(encoding="utf-8")
    assert "## Sequential evaluation: what it saved" in en
    assert "8 generations instead of 60 for fixed N (13.3%)" in en
    assert "| bad | 4 / 20 | 4 / 20 |" in en
    assert "| big | 0 / 20 | 0 / 20 | not evaluated: fails peak_memory_max" in en
    assert "Waudby-Smith" in en
    zh = (out / "report.zh.md").read_text(encoding="utf-8")
    assert "序贯评估" in zh and "未评估：未通过 peak_memory_max" in zh
    html = (out / "report.en.html").read_text(encoding="utf-8")
    assert html.index("Sequential evaluation") < html.index("</body>")
    assert json.loads((out / "data" / "sequential.json").read_text())["looks"] == 1


def test_a_spent_budget_names_what_is_open_and_the_items_next_in_line(scripted, data,
                                                                      monkeypatch):
    import edgepick.clock
    from scripted_engine import ScriptedBackend

    make, store = scripted
    ScriptedBackend.clock = [0.0]
    monkeypatch.setattr(edgepick.clock, "clock", lambda: ScriptedBackend.clock[0])
    ref, good = make("ref", lambda p, s: "yes"), make("good", lambda p, s: "yes")
    res = run(EvalRequest(data=data, reference=ref, candidates=[good], sequential=True,
                          gates=[UNACCEPTABLE], budget_s=10.0), store)  # 1 s a generation
    text = "\n".join(savings_section.lines(res, "en"))
    assert "Time budget of 10 s spent; undetermined: good: unacceptable_rate" in text
    assert "To settle good: unacceptable_rate (yes_no), next items: yn" in text
    cell = next(x for x in savings_lines(res) if x.startswith("good [yes_no]: "))
    assert "time budget spent while open: unacceptable_rate over all tasks, unacceptable_rate " \
        "in yes_no" in cell, cell


def test_every_cell_names_its_task_and_a_settled_candidate_says_why_it_went_on(scripted,
                                                                               tmp_path):
    make, store = scripted
    data = write_set(tmp_path / "two.jsonl", yes_no(16) + classification(16))
    loose = UNACCEPTABLE.model_copy(update={"limit": 0.5})  # settles in a few items

    def right(p, s):
        return "yes" if p.startswith("yn") else "positive"

    ref, a, b = make("ref", right), make("a", right), make("b", right)
    bad = make("bad", lambda p, s: "")
    res = run(EvalRequest(data=data, reference=ref, candidates=[a, b, bad], sequential=True,
                          gates=[loose]), store)
    by = {c.name: c for c in res.sequential.candidates}
    text = "\n".join(savings_lines(res))
    # a and b pass every gate early; as their quality intervals overlap they go on to the cap
    for me, other in (("a", "b"), ("b", "a")):
        c = by[me]
        assert all(g.verdict == "pass" for g in c.gates) and c.items == 32
        assert c.went_on.startswith("every gate settled at look ")
        assert f"its rank against {other} (quality intervals overlap) could still change" \
            in c.went_on
        assert f"{me}: {c.went_on}" in text
        assert [(x.task, x.items, x.planned) for x in c.cells] == [("yes_no", 16, 16),
                                                                    ("classification", 16, 16)]
        assert f"{me} [classification]: 16 of 16 items; unacceptable_rate pass (look " in text
        assert f"all 16 items used, still open: rank against {other}" in text
    # the failed one stops once its gates are settled, each of its cells named with its task
    assert not by["bad"].went_on and "bad: every gate" not in text
    for task in ("yes_no", "classification"):
        (line,) = [x for x in text.splitlines() if x.startswith(f"bad [{task}]: ")]
        assert "unacceptable_rate fail (look" in line and "settled at look" in line


def test_the_printed_note_keeps_the_cells_task(result):
    """A cell's "[yes_no]" is text on the terminal, not a console style that swallows it."""
    from edgepick.cli.decision_print import print_notes
    from edgepick.cli.output import console

    res, _ = result
    with console.capture() as cap:
        print_notes(savings_lines(res))
    assert "note: bad [yes_no]: 4 of 20 items" in cap.get()
