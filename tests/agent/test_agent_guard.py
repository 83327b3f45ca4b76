"""The guard: every repair of a harmless slip is made and logged, everything else is refused."""

from __future__ import annotations

import logging

import pytest

from edgepick.agent.builtins import BUILTINS
from edgepick.toolcall.guard import Guard

TOOLS = {n: b.parameters for n, b in BUILTINS.items()}


def check(reply: str):
    return Guard(TOOLS).check(reply)


def kinds(v) -> list[str]:
    return [r.kind for r in v.repairs]


def test_a_clean_call_passes_without_repair():
    v = check('{"name": "read_file", "arguments": {"path": "notes.txt"}}')
    assert v.status == "call" and v.arguments == {"path": "notes.txt"} and not v.repairs


def test_plain_text_is_an_answer():
    v = check("Paris is the capital of France.")
    assert v.status == "answer" and not v.refused


@pytest.mark.parametrize("reply, want, kind", [
    ('{"name": " read_file ", "arguments": {"path": "a.txt"}}', {"path": "a.txt"}, "whitespace"),
    ('{"name": "Read_File", "arguments": {"path": "a.txt"}}', {"path": "a.txt"}, "case"),
    ('{"name": "read_file", "arguments": {"path": "  a.txt "}}', {"path": "a.txt"}, "whitespace"),
    ('{"name": "read_file", "arguments": {"path": "\'a.txt\'"}}', {"path": "a.txt"}, "quotes"),
    ('{"name": "read_file", "arguments": {" path": "a.txt"}}', {"path": "a.txt"}, "whitespace"),
    ("{'name': 'read_file', 'arguments': {'path': 'a.txt'}}", {"path": "a.txt"}, "quotes"),
    ('{“name”: “read_file”, “arguments”: {“path”: “a.txt”}}', {"path": "a.txt"}, "quotes"),
    ('{"name": "read_file", "arguments": {"path": "a.txt",},}', {"path": "a.txt"},
     "trailing_comma"),
    ('{"name": "read_file", "arguments": "{\'path\': \'a.txt\'}"}', {"path": "a.txt"}, "quotes"),
    ('{"name": "convert_units", "arguments": {"value": "12.5", "from_unit": "km", '
     '"to_unit": "mile"}}', {"value": 12.5, "from_unit": "km", "to_unit": "mile"},
     "number_as_string"),
    ('{"name": "add_event", "arguments": {"title": "x", "date": "2026-03-05", '
     '"duration_minutes": "45"}}', {"title": "x", "date": "2026-03-05", "duration_minutes": 45},
     "number_as_string"),
    ('{"name": "add_event", "arguments": {"title": "x", "date": "2026-03-05", '
     '"duration_minutes": 45.0}}', {"title": "x", "date": "2026-03-05", "duration_minutes": 45},
     "whole_number"),
    ('{"name": "convert_units", "arguments": {"value": 1, "from_unit": "KM", "to_unit": "Mile"}}',
     {"value": 1, "from_unit": "km", "to_unit": "mile"}, "case"),
])
def test_harmless_slips_are_repaired_and_logged(reply, want, kind, caplog):
    with caplog.at_level(logging.INFO, logger="edgepick.toolcall.guard"):
        v = check(reply)
    assert v.status == "call", v.error
    assert v.arguments == want and kind in kinds(v)
    assert all(r.detail for r in v.repairs)
    assert sum("repaired" in rec.getMessage() for rec in caplog.records) == len(v.repairs)


def test_unknown_tool_is_refused_with_the_list_of_tools():
    v = check('{"name": "format_disk", "arguments": {}}')
    assert v.status == "unknown_tool" and v.refused
    assert "format_disk" in v.error and "read_file" in v.error


def test_invalid_arguments_are_refused_with_the_schema():
    v = check('{"name": "convert_units", "arguments": {"value": "lots", "from_unit": "km", '
              '"to_unit": "mile"}}')
    assert v.status == "invalid_arguments" and v.name == "convert_units"
    assert "value" in v.error and '"enum"' in v.error  # the parameters go back to the model
    v = check('{"name": "read_file", "arguments": {"path": "a", "mode": "rw"}}')
    assert v.status == "invalid_arguments" and "mode" in v.error


def test_unparseable_call_is_refused_with_the_expected_form():
    v = check('{"name": "read_file", "arguments": {"path": ')
    assert v.status == "unparseable" and '{"name": "<tool>"' in v.error


def test_a_string_is_not_silently_turned_into_a_number_where_text_is_expected():
    v = check('{"name": "add_event", "arguments": {"title": "2026", "date": "2026-03-05"}}')
    assert v.status == "call" and v.arguments["title"] == "2026" and not v.repairs
