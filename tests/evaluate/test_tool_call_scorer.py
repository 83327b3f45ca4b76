"""The tool_call scorer's rules, each against adversarial replies, and the item checks."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest

from edgepick.evaluate.items import EvalItem, load_eval_set
from edgepick.evaluate.scorers import get_scorer
from edgepick.evaluate.unacceptable import reasons

CONVERT = {"type": "function", "function": {"name": "convert_units", "description": "Convert.",
           "parameters": {"type": "object", "properties": {
               "value": {"type": "number"}, "from_unit": {"type": "string"},
               "to_unit": {"type": "string", "enum": ["mile", "km"]},
               "exact": {"type": "boolean"}},
               "required": ["value", "from_unit", "to_unit"], "additionalProperties": False}}}
DELETE = {"type": "function", "function": {"name": "delete_file", "description": "Delete.",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                         "required": ["path"]}}}
WANT = {"name": "convert_units", "arguments": {"value": 5, "from_unit": "km", "to_unit": "mile"}}


def item(reference=WANT, critical=False, **kw) -> EvalItem:
    return EvalItem.model_validate({"id": "t", "task": "tool_call", "tools": [CONVERT, DELETE],
                                    "messages": [{"role": "user", "content": "5 km in miles?"}],
                                    "reference": reference, "critical": critical, **kw})


def score(out: str, it: EvalItem | None = None):
    return get_scorer("tool_call").score(it or item(), out)


def call(name="convert_units", **args) -> str:
    return json.dumps({"name": name, "arguments": args or WANT["arguments"]})


def test_exact_call_passes_strictly():
    s = score(call())
    assert s.correct and s.format_ok and s.strict_format and s.score == 1.0


@pytest.mark.parametrize("out", [
    "Sure, here is the call: " + call() + " Let me know if you need more.",
    "```json\n" + call() + "\n```",
    "<tool_call>\n" + call() + "\n</tool_call>",
    json.dumps({"type": "function", "function": {"name": "convert_units",
                                                 "arguments": json.dumps(WANT["arguments"])}}),
    json.dumps([{"name": "convert_units", "parameters": WANT["arguments"]}]),
])
def test_call_found_inside_extra_text_and_native_shapes(out):
    s = score(out)
    assert s.correct and s.format_ok, s.why


def test_text_around_the_call_is_not_strict():
    s = score("Calling it now: " + call())
    assert s.correct and s.strict_format is False


def test_number_compared_as_number_not_as_text():
    assert score(call(value=5.0, from_unit="km", to_unit="mile")).correct
    s = score(call(value="5", from_unit="km", to_unit="mile"))
    assert not s.correct and not s.format_ok and s.format_error == "invalid_json"
    assert "value" in s.why and s.details["args_wrong"] == ["value"]


def test_wrong_value_is_a_badcase_but_well_formed():
    s = score(call(value=6, from_unit="km", to_unit="mile"))
    assert not s.correct and s.format_ok and s.format_error is None
    assert s.details["args_matched"] == 2 and 0.5 < s.score < 1


def test_boolean_is_not_a_number():
    it = item({"name": "convert_units", "arguments": {**WANT["arguments"], "exact": True}})
    assert not score(call(**WANT["arguments"], exact=1), it).correct
    assert score(call(**WANT["arguments"], exact=True), it).correct


def test_strings_compare_after_case_and_width_folding():
    it = item({"name": "delete_file", "arguments": {"path": "Old Draft.txt"}})
    assert score(call("delete_file", path="  old   draft.TXT "), it).correct
    assert score(call("delete_file", path="ｏｌｄ draft.txt"), it).correct


def test_hallucinated_tool_is_unacceptable():
    s = score(call("convert", value=5))
    assert not s.format_ok and "hallucinated tool 'convert'" in s.why
    assert reasons(item(), call("convert", value=5), "stop", s) == ["invalid_json"]


def test_schema_breaking_arguments_are_unacceptable():
    s = score(call(value=5, from_unit="km", to_unit="furlong"))
    assert not s.format_ok and "schema" in s.why and s.details["schema_valid"] is False


def test_unparseable_call_is_unacceptable():
    s = score('{"name": "convert_units", "arguments": {"value": 5, "from_unit": "km"')
    assert not s.correct and not s.format_ok and s.why.startswith("unparseable call")
    s = score('{"arguments": {"value": 5}}')
    assert not s.format_ok and "no tool name" in s.why


def test_call_when_none_is_needed_and_none_when_one_is():
    none_item = item("none")
    s = score(call(), none_item)
    assert not s.correct and s.format_ok and "no call was needed" in s.why
    s = score("The capital of France is Paris.", none_item)
    assert s.correct and s.strict_format is None
    s = score("5 km is about 3.1 miles.")
    assert not s.correct and s.format_ok and s.why == "no call where one was needed"


def test_destructive_call_on_a_critical_item_is_unacceptable():
    it = item("none", critical=True)
    out = call("delete_file", path="notes.txt")
    s = score(out, it)
    assert "critical_wrong" in reasons(it, out, "stop", s)


def test_aggregate_metrics_under_their_names():
    sc = get_scorer("tool_call")
    none_item = item("none")
    pairs = [(item(), call()),                                              # right
             (item(), call(value=6, from_unit="km", to_unit="mile")),      # right tool, 2/3 args
             (item(), "about 3 miles"),                                     # missed call
             (none_item, "Paris."),                                         # right no-call
             (none_item, call("delete_file", path="x")),                    # needless call
             (item(), '{"name": "nope", "arguments": {}}')]                 # hallucinated
    scores = [sc.score(it, out) for it, out in pairs]
    m = sc.aggregate([it for it, _ in pairs], scores)
    assert m["tool_choice_accuracy"] == pytest.approx(3 / 6)
    assert m["argument_accuracy"] == pytest.approx(5 / 6)  # fields of the two right-tool items
    assert m["schema_valid_rate"] == pytest.approx(3 / 4)  # of the four replies that call
    assert m["no_call_precision"] == pytest.approx(1 / 2)  # "Paris." right, "about 3 miles" not
    assert m["no_call_recall"] == pytest.approx(1 / 2)
    assert m["tool_choice_accuracy_n"] == 6 and m["argument_accuracy_n"] == 6
    assert m["schema_valid_rate_n"] == 4 and m["no_call_precision_n"] == 2
    assert m["guard_refused_rate"] == pytest.approx(1 / 4)  # the hallucinated tool
    assert m["guard_repaired_rate"] == 0


def test_guard_outcome_per_reply():
    sc = get_scorer("tool_call")
    assert sc.score(item(), call()).details["guard"] == "clean"
    s = sc.score(item(), call(value="5", from_unit="km", to_unit="mile"))
    assert s.details["guard"] == "repaired" and not s.format_ok  # the scorer stays strict
    assert sc.score(item(), "{'name': 'convert_units'").details["guard"] == "refused"
    assert "guard" not in sc.score(item(), "3.1 miles").details


def test_no_call_precision_is_absent_when_the_model_never_declines():
    sc = get_scorer("tool_call")
    m = sc.aggregate([item()], [sc.score(item(), call())])
    assert "no_call_precision" not in m and m["tool_choice_accuracy"] == 1.0


@pytest.mark.parametrize("patch, field, words", [
    ({"tools": None}, "tools", "required for task 'tool_call'"),
    ({"tools": [{"name": "x"}]}, "tools.0", "expected"),
    ({"reference": {"name": "launch", "arguments": {}}}, "reference", "does not offer"),
    ({"reference": {"name": "convert_units", "arguments": {"value": "5"}}}, "reference",
     "break the tool's own schema"),
    ({"reference": "nothing"}, "reference", 'must be "none"'),
])
def test_bad_items_name_the_line_and_field(tmp_path, patch, field, words):
    good = {"id": "a", "task": "tool_call", "tools": [CONVERT],
            "messages": [{"role": "user", "content": "hi"}], "reference": "none"}
    bad = dict(good, id="b", **patch)
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    items, problems = load_eval_set(path)
    assert [i.id for i in items] == ["a"]
    assert len(problems) == 1 and problems[0].line == 2 and problems[0].field == field
    assert words in problems[0].problem


def test_the_bundled_demo_set():
    items, problems = load_eval_set(str(files("edgepick").joinpath("data/demo_tools.jsonl")))
    assert not problems and len(items) >= 60
    assert {i.meta["lang"] for i in items} == {"en", "zh"}
    assert {i.difficulty for i in items} == {"easy", "medium", "hard"}
    called = {i.reference["name"] for i in items if i.reference != "none"}
    assert {"read_file", "add_event", "list_events", "convert_units", "search_notes",
            "delete_file"} <= called
    assert sum(i.reference == "none" for i in items) >= 10
    assert any(i.critical for i in items)
    # Every reference passes its own scorer, and the prefix of 12 covers every kind.
    sc = get_scorer("tool_call")
    for it in items:
        out = "No tool needed." if it.reference == "none" else json.dumps(it.reference,
                                                                          ensure_ascii=False)
        assert sc.score(it, out).correct, it.id
    head = items[:12]
    assert {i.difficulty for i in head} == {"easy", "medium", "hard"}
    assert {i.meta["lang"] for i in head} == {"en", "zh"}
    assert any(i.reference == "none" for i in head) and any(i.reference != "none" for i in head)


def test_a_plan_names_the_bundled_tool_set(tmp_path):
    from edgepick.plan.loader import load_plan

    plan = tmp_path / "plan.yaml"
    plan.write_text("name: t\ndevice: raspberry-pi-5\noutput: out\ncandidates:\n  - model: tiny\n"
                    "eval:\n  data: demo-tools\n  reference: tiny\n  limit: 12\n"
                    "scenario:\n  name: agent_tool_calling\n")
    assert load_plan(plan).eval_data().endswith("demo_tools.jsonl")
