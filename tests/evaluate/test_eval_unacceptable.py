"""Each unacceptable reason of seed 004 §2.3 on the example docs/evaluate.md gives for it, and
what is NOT unacceptable (a correct answer in a sentence, a long answer that finished)."""

from __future__ import annotations

import pytest

from edgepick.evaluate.items import EvalItem
from edgepick.evaluate.scorers import get_scorer
from edgepick.evaluate.unacceptable import reasons

SCHEMA = {"type": "object", "required": ["name", "age"],
          "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}


def item(task, reference, **kw):
    kw.setdefault("prompt", "p")
    return EvalItem(id="x", task=task, reference=reference, **kw)


def why(it, out, finish="stop"):
    return reasons(it, out, finish, get_scorer(it.task).score(it, out))


ZH_CLS = item("classification", "正面", labels=["正面", "负面", "中性"], tags=["zh"])
EN_CLS = item("classification", "positive", labels=["positive", "negative"], tags=["en"])
EXT = item("extraction", {"name": "张伟", "age": 30}, schema=SCHEMA, tags=["zh"])


@pytest.mark.parametrize("it, out, finish, expected", [
    (EN_CLS, "", "stop", ["empty"]),
    (EN_CLS, "I cannot tell from this text.", "stop", ["no_answer"]),
    (item("math", 4), "many", "stop", ["no_answer"]),
    (EXT, "Name: Zhang Wei, age thirty", "stop", ["no_answer", "wrong_language"]),
    (EXT, '{"name": "张伟", "age": "thirty"}', "stop", ["invalid_json"]),  # breaks the schema
    (EXT, '{"name": "张伟", "age": 30,,}', "stop", ["invalid_json"]),  # does not parse
    (EXT, '{"name": "张伟", "ag', "length", ["truncated"]),  # cut at the budget
    # a complete object missing a required field, then chatter up to the budget: the schema
    # broke, not the budget
    (EXT, '```json\n{"name": "张伟"}\n```\n这是一个 JSON 对象，可以使用', "length", ["invalid_json"]),
    (item("qa", "北京", tags=["zh"]), "中国是一个美好的美丽的美丽；；；；；；；；；；；；；", "stop",
     ["repetition_loop"]),
    (EN_CLS, "yes " * 12, "stop", ["no_answer", "repetition_loop"]),
    (EN_CLS, "yes " * 12, "length", ["truncated", "repetition_loop"]),
    (ZH_CLS, "positive", "stop", ["no_answer", "wrong_language"]),
    (EN_CLS, "正面情感", "stop", ["no_answer", "wrong_language"]),
    (item("qa", "Paris", critical=True), "Lyon", "stop", ["critical_wrong"]),
    (EN_CLS, "", "error", ["engine_error"]),
])
def test_each_reason(it, out, finish, expected):
    assert why(it, out, finish) == expected


@pytest.mark.parametrize("it, out, finish", [
    (EN_CLS, "The sentiment of this review is clearly positive, because the buyer praises it.",
     "stop"),
    (ZH_CLS, "这段文字的情感是正面的。", "stop"),
    (EN_CLS, "Positive. The reviewer likes the screen and the battery and would buy it again and",
     "length"),  # answered, then ran out of budget: still usable
    (EXT, '```json\n{"name": "张伟", "age": 30}\n```', "stop"),
    (item("math", 42), "17 + 25 = 42", "stop"),
    (item("qa", "Paris", critical=True), "The capital of France is Paris.", "stop"),
    (EXT, '{"name": "张伟", "age": 30}', "stop"),  # English keys, Chinese values: right script
])
def test_acceptable_outputs(it, out, finish):
    assert why(it, out, finish) == []


def test_language_check_needs_a_language_and_a_reference_in_its_script():
    assert why(item("qa", "Paris"), "巴黎", "stop") == []  # no language given: not checked
    brand = item("qa", "iPhone", tags=["zh"])  # a Chinese item whose answer is a Latin name
    assert why(brand, "iPhone", "stop") == []
    assert why(item("qa", "Paris", meta={"lang": "en"}), "法国巴黎", "stop") == ["wrong_language"]
