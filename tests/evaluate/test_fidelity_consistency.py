"""The pieces of the consistency test that need no model: divergence index, prompt loading."""

from __future__ import annotations

import json

import pytest

from edgepick.errors import EdgepickError
from edgepick.evaluate.consistency import first_divergence, load_prompts


def test_first_divergence():
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 9, 3]) == 1
    assert first_divergence([5], [6]) == 0
    assert first_divergence([1, 2], [1, 2, 3, 4]) == 2  # a prefix parts where it ends
    assert first_divergence([], []) is None


def test_prompts_need_no_answers_and_bad_lines_are_named(tmp_path):
    path = tmp_path / "p.jsonl"
    rows = [
        json.dumps({"id": "a", "task": "qa", "prompt": "hi", "reference": "hello"}),
        json.dumps({"id": "b", "task": "classification", "prompt": "好不好？"}),  # no reference/labels
        "{not json",
        json.dumps({"id": "c", "task": "nonsense", "prompt": "x", "reference": "y"}),
        "",
        json.dumps({"id": "d", "task": "qa", "messages": [{"role": "user", "content": "q"}]}),
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    prompts, skipped = load_prompts(path)
    assert [p[0] for p in prompts] == ["a", "b", "d"]
    assert prompts[1][1] == [{"role": "user", "content": "好不好？"}]
    assert prompts[2][1] == [{"role": "user", "content": "q"}]
    assert any(":3:" in s and "JSON" in s for s in skipped)
    assert any(":4:" in s and "task" in s for s in skipped)
    assert len(skipped) == 2


def test_a_file_without_any_usable_prompt_is_an_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("{oops\n", encoding="utf-8")
    with pytest.raises(EdgepickError, match="no usable prompts"):
        load_prompts(path)
