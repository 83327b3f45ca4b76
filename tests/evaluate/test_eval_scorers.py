"""Every scorer on hand-made outputs whose right answers are known (English and Chinese)."""

from __future__ import annotations

import pytest

from edgepick.evaluate.items import EvalItem
from edgepick.evaluate.scorers import get_scorer
from edgepick.evaluate.scorers.extraction import find_json_object
from edgepick.evaluate.scorers.labels import macro_f1
from edgepick.evaluate.scorers.numeric import parse_number
from edgepick.evaluate.scorers.qa import token_f1
from edgepick.evaluate.scorers.summary import rouge_l
from edgepick.evaluate.unacceptable import reasons, repetition_loop


def item(task, reference, **kw):
    return EvalItem(id="x", task=task, prompt="p", reference=reference, **kw)


def score(it, out):
    return get_scorer(it.task).score(it, out)


# -- labels ------------------------------------------------------------------------------------
EN = item("classification", "negative", labels=["positive", "negative", "neutral"])
ZH = item("classification", "取消", labels=["查询", "下单", "取消", "其他"])


@pytest.mark.parametrize("out, pred", [
    ("negative", "negative"), ("  NEGATIVE.\n", "negative"), ("Negative!", "negative"),
    ("Ｎｅｇａｔｉｖｅ", "negative"),  # full-width letters
    ("The sentiment is negative.", "negative"),  # label inside a longer answer
    ("positive", "positive"), ("", None), ("I cannot tell", None),
    ("Label: neutral, not negative", "neutral"),  # first label in the answer wins
])
def test_label_normalisation_english(out, pred):
    s = score(EN, out)
    assert s.details["pred"] == pred
    assert s.correct == (pred == "negative")
    assert s.format_ok == (pred is not None)


def test_label_whole_words_only():
    it = item("classification", "other", labels=["order", "other"])
    assert score(it, "another reorder").details["pred"] is None
    assert score(it, "other").correct


@pytest.mark.parametrize("out, pred", [("取消", "取消"), ("取消。", "取消"), ("标签：取消", "取消"),
                                       ("用户想要取消订单", "取消"), ("查询", "查询"), ("好的", None)])
def test_label_chinese(out, pred):
    assert score(ZH, out).details["pred"] == pred


@pytest.mark.parametrize("out, gold, ok", [
    ("Yes.", "yes", True), ("no", "yes", False), ("No, it is not.", "no", True),
    ("是", "是", True), ("否", "否", True), ("不是。", "否", True),  # 不是 must not read as 是
    ("是的，太阳是恒星", "是", True), ("鲸鱼不是鱼", "否", True), ("maybe", "yes", False),
])
def test_yes_no(out, gold, ok):
    s = score(item("yes_no", gold), out)
    assert s.correct is ok


def test_macro_f1_known_value():
    gold = ["a", "a", "b", "b"]
    pred = ["a", "b", "b", None]
    # a: tp1 fp0 fn1 -> 2/3; b: tp1 fp1 fn1 -> 1/2
    assert macro_f1(gold, pred) == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert macro_f1(gold, gold) == 1.0


# -- extraction --------------------------------------------------------------------------------
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "city", "age"],
          "properties": {"name": {"type": "string"}, "city": {"type": "string"},
                         "age": {"type": "integer"}}}
EXT = item("extraction", {"name": "张伟", "city": "北京", "age": 30}, schema=SCHEMA)


def test_extraction_exact_json():
    s = score(EXT, '{"name": "张伟", "city": "北京", "age": 30}')
    assert s.correct and s.format_ok and s.score == 1.0 and s.details["strict_json"]


def test_extraction_fenced_and_prose():
    fenced = 'Here you go:\n```json\n{"name": "张伟", "city": "北京", "age": 30}\n```\nDone.'
    prose = 'The JSON is {"name": "张伟", "city": "北京", "age": 30} as asked.'
    for out in (fenced, prose):
        s = score(EXT, out)
        assert s.correct and s.details["json_ok"] and not s.details["strict_json"]


def test_extraction_field_level_prf():
    # one of three fields wrong: P = R = 2/3
    s = score(EXT, '{"name": "张伟", "city": "上海", "age": 30}')
    assert s.score == pytest.approx(2 / 3) and not s.correct and s.format_ok
    assert "city" in s.why
    # two right, one missing (schema fails: required)
    s = score(EXT, '{"name": "张伟", "city": "北京"}')
    assert not s.format_ok and s.details["json_ok"] and not s.details["schema_ok"]
    assert s.score == pytest.approx(2 * 1.0 * (2 / 3) / (1 + 2 / 3))


def test_extraction_malformed_json():
    for out in ('{"name": "张伟", "city": "北京", "age": 30', "name: 张伟, city: 北京", "",
                "```json\n{'name': '张伟'}\n```"):
        s = score(EXT, out)
        assert not s.format_ok and s.score == 0.0 and not s.details["json_ok"]


def test_extraction_schema_type_violation():
    s = score(EXT, '{"name": "张伟", "city": "北京", "age": "30"}')
    assert s.details["json_ok"] and not s.details["schema_ok"] and not s.correct
    assert s.score == 1.0  # the value is right ("30" == 30); the format is not


def test_find_json_object_prefers_first_object():
    obj, strict = find_json_object('noise {"a": 1} more {"b": 2}')
    assert obj == {"a": 1} and not strict


# -- QA --------------------------------------------------------------------------------------
def test_qa_exact_and_f1():
    it = item("qa", ["William Shakespeare", "Shakespeare"])
    assert score(it, "Shakespeare.").details["exact_match"]
    s = score(it, "It was written by William Shakespeare")
    assert s.correct and not s.details["exact_match"]
    assert token_f1("the Paris", "Paris") == 1.0  # articles dropped
    assert token_f1("Paris France", "Paris") == pytest.approx(2 / 3)
    assert not score(item("qa", "Paris"), "London").correct


def test_qa_chinese_by_character():
    assert token_f1("北京市", "北京") == pytest.approx(0.8)  # P 2/3, R 1
    s = score(item("qa", "北京"), "北京")
    assert s.details["exact_match"] and s.score == 1.0
    assert score(item("qa", "北京"), "中国的首都是北京").correct  # contains the answer
    assert not score(item("qa", "长江"), "黄河").correct


# -- summaries ---------------------------------------------------------------------------------
def test_rouge_l_known_values():
    # LCS of "the cat sat on the mat" / "the cat is on the mat" = 5 of 6 each
    p, r, f = rouge_l("the cat sat on the mat", "the cat is on the mat")
    assert (p, r, f) == (pytest.approx(5 / 6), pytest.approx(5 / 6), pytest.approx(5 / 6))
    assert rouge_l("", "x")[2] == 0.0


def test_rouge_l_chinese_characters():
    # LCS("小区周六停水", "周六小区停水检修") = 周六停水 (4); P 4/6, R 4/8
    p, r, f = rouge_l("小区周六停水", "周六小区停水检修")
    assert p == pytest.approx(4 / 6) and r == pytest.approx(4 / 8)
    s = score(item("summary", "周六小区停水检修"), "小区周六停水")
    assert s.score == pytest.approx(f) and s.correct


# -- arithmetic --------------------------------------------------------------------------------
@pytest.mark.parametrize("text, value", [
    ("42", 42), ("The answer is 42.", 42), ("17 + 25 = 42", 42), ("１２３", 123),
    ("1,280.5 yuan", 1280.5), ("-7", -7), ("3/4", 0.75), ("答案是 22.5 元", 22.5), ("no idea", None),
])
def test_parse_number(text, value):
    assert parse_number(text) == (pytest.approx(value) if value is not None else None)


def test_numeric_match_and_tolerance():
    it = item("math", 22.5)
    assert score(it, "22.5").correct and score(it, "22.50000001").correct
    assert not score(it, "22.6").correct
    s = score(it, "I don't know")
    assert not s.format_ok and s.why == "no number in the answer"


# -- code --------------------------------------------------------------------------------------
def test_code_scorer():
    it = item("code", "def add(a, b):\n    return a + b")
    assert score(it, "```python\ndef add(a, b):\n  return a + b\n```").details["exact_match"]
    assert not score(it, "print('hello')").correct


# -- unacceptable ------------------------------------------------------------------------------
def test_repetition_loop_definition():
    assert repetition_loop("the answer is 5. " * 3)
    assert not repetition_loop("the answer is 5. " * 2)
    assert repetition_loop("ha " * 12) and not repetition_loop("ha " * 11)
    assert repetition_loop("好" * 12) and repetition_loop("我喜欢你" * 3)
    assert not repetition_loop("1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14")


def test_unacceptable_reasons_basic():
    qa = item("qa", "Paris", critical=True)
    ext = item("extraction", {"a": 1}, critical=True)
    assert reasons(qa, "  ", "stop", score(qa, "  ")) == ["empty", "critical_wrong"]
    assert reasons(ext, "not json", "stop", score(ext, "not json")) == ["no_answer", "critical_wrong"]
    assert reasons(qa, "Paris", "stop", score(qa, "Paris")) == []
    # a long correct answer cut at the budget is acceptable: verbosity is not a reason
    summ = item("summary", "a cat sat")
    assert reasons(summ, "a cat sat on the mat and then", "length", score(summ, "x")) == []


# -- adversarial outputs (issue 15) ------------------------------------------------------------
@pytest.mark.parametrize("out, gold, ok", [
    ("That is not correct.", "no", True), ("Not true.", "no", True), ("not correct", "yes", False),
    ("It isn't true", "no", True), ("That's not right", "no", True), ("never true", "no", True),
    ("Not false: it is a star.", "yes", True), ("Yes, it is not a planet.", "yes", True),
    ("没错", "是", True), ("不正确", "否", True), ("并非如此", "否", True),
])
def test_yes_no_negation(out, gold, ok):
    assert score(item("yes_no", gold), out).correct is ok


QA_FR = EvalItem(id="q", task="qa", reference="Paris",
                 prompt="Answer the question.\nQuestion: What is the capital of France?")


@pytest.mark.parametrize("out, ok", [
    ("Paris", True), ("The capital of France is Paris.", True), ("Answer: Paris", True),
    ("Paris, France", True),  # the other part restates the question
    ("Paris, Lyon, Marseille", False), ("Paris or Lyon", False), ("Lyon, Paris", False),
    ("1. Paris\n2. Lyon\n3. Nice", False), ("- Lyon\n- Paris", False), ("Paris and London", False),
    ("It is Paris, the largest city of the country.", True),
])
def test_qa_rejects_lists_of_guesses(out, ok):
    s = score(QA_FR, out)
    assert s.correct is ok, s.why


def test_qa_chinese_guesses():
    it = EvalItem(id="q", task="qa", reference="北京", prompt="问题：中国的首都是哪座城市？")
    assert score(it, "北京").correct and score(it, "中国的首都是北京。").correct
    assert not score(it, "北京或上海").correct and not score(it, "上海、北京、广州").correct


@pytest.mark.parametrize("out, got, ok", [
    ("42 (17+25)", 42, True), ("17 + 25 = 42", 42, True), ("The answer is 42.", 42, True),
    ("答案：42", 42, True), ("x = 5, so the answer is 42", 42, True), ("42", 42, True),
    ("Step 1: 20 + 5 = 25\nAnswer: 42", 42, True), ("There are 17 and 25 apples", None, False),
    ("I think 40 or 42", None, False), ("About forty-two", None, False), ("**42**", 42, True),
])
def test_math_takes_the_marked_answer(out, got, ok):
    s = score(item("math", 42), out)
    assert s.details["pred"] == got and s.correct is ok
    assert s.format_ok == (got is not None)
    assert (s.format_error == "no_answer") == (got is None)


def test_strict_format_rates():
    assert score(EN, "negative").strict_format and not score(EN, "The sentiment is negative.").strict_format
    assert score(EN, "The sentiment is negative.").correct  # wordy but correct stays correct
    assert score(item("math", 4), "4").strict_format and not score(item("math", 4), "2+2=4").strict_format
    assert score(EXT, '{"name": "张伟", "city": "北京", "age": 30}').strict_format
    fenced = score(EXT, '```json\n{"name": "张伟", "city": "北京", "age": 30}\n```')
    assert fenced.correct and not fenced.strict_format
    assert score(item("summary", "x y"), "x y").strict_format is None  # free text: no strict form
