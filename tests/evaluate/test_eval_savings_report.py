"""What sequential evaluation saved, as the run prints it (evaluate/savings.py) and the report
shows it (report/savings_section.py): generations against fixed N, time saved, per candidate its
items, why it stopped and each gate's stopping look, and the candidates not evaluated at all."""

from __future__ import annotations

import json

import pytest

from edgepick.evaluate.savings import savings, savings_lines
from edgepick.evaluate.stage import EvalRequest, run
from edgepick.report import savings_section

from seq_sets import UNACCEPTABLE, write_set, yes_no


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
    assert "bad: 4 of 20 items" in text and "unacceptable_rate[all] fail (look 1, 4 items)" in text
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
