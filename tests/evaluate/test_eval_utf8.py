"""Outputs are never cut inside a UTF-8 character: at generation (a budget that stops between
the two byte-level tokens of one Chinese character) and at display (the report shortens by
characters)."""

from __future__ import annotations

from edgepick.backends.llama_cpp import whole_chars
from edgepick.report.tables import _short


def test_partial_character_is_dropped_not_replaced():
    data = "好的，北京".encode()
    for cut in range(len(data) + 1):
        text = whole_chars(data[:cut])
        assert "\ufffd" not in text and "好的，北京".startswith(text)
    assert whole_chars(b"ab\xffcd") == "ab\ufffdcd"  # a bad byte inside stays visible


def test_generation_on_a_chinese_prompt_ends_on_whole_characters(tiny_model):
    from edgepick.backends import get_backend
    from edgepick.records.candidate import Candidate

    b = get_backend("llama_cpp")
    b.load(Candidate(model=tiny_model))
    try:
        msgs = [{"role": "user", "content": "用中文介绍一下北京的历史和文化。"}]
        full = b.generate(msgs, 12, chat=True)
        for n in range(1, 12):
            g = b.generate(msgs, n, chat=True)
            assert not g.text.endswith("\ufffd")
            assert full.text.startswith(g.text)  # greedy: each budget is a prefix of the next
    finally:
        b.unload()


def test_display_shortens_by_characters():
    text = "北京" * 100
    short = _short(text, 11)
    assert short == "北京" * 5 + "…" and "\ufffd" not in short
