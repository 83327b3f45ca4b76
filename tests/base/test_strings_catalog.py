"""The bilingual catalog (data/strings.yaml): every string has both languages, a sentence's
Chinese fills the same fields as its English, and every key the code names literally exists."""

from __future__ import annotations

import re
import string
from pathlib import Path

from edgepick.strings import catalog, say

SRC = Path(__file__).resolve().parents[2] / "src" / "edgepick"


def _entries():
    for section, body in catalog().items():
        if {"en", "zh"} <= set(body):  # a section that is one string (default_advice)
            yield section, section, body
        else:
            for key, e in body.items():
                yield section, key, e


def _fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_every_string_has_english_and_chinese():
    for section, key, e in _entries():
        assert set(e) == {"en", "zh"}, f"{section}.{key}: {sorted(e)}"
        assert e["zh"], f"{section}.{key}: empty Chinese"


def test_a_sentence_fills_the_same_fields_in_both_languages():
    for key, e in catalog()["sentences"].items():
        assert _fields(e["en"]) == _fields(e["zh"]), key


def test_every_key_the_code_names_is_in_the_catalog():
    used = {"sentences": r"\bt\(['\"](\w+)['\"]", "report": r"\btr\(['\"](\w+)['\"]"}
    seen = dict.fromkeys(used, 0)
    for section, pattern in used.items():
        for path in SRC.rglob("*.py"):
            for key in re.findall(pattern, path.read_text(encoding="utf-8")):
                assert key in catalog()[section], f"{path.name}: '{key}' not in {section}"
                seen[section] += 1
    assert all(seen.values()), seen  # the patterns still find the calls


def test_a_key_not_in_the_catalog_reads_as_itself_and_a_language_falls_back_to_english():
    assert say("labels", "no_such_metric", "zh") == "no_such_metric"
    assert say("report", "title", "fr") == say("report", "title", "en")
    assert say("report", "title", "zh") != say("report", "title", "en")
