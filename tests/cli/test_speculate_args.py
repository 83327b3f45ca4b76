"""`edgepick speculate`'s --kind and item choice: TYPE[:DRAFT][:N_MAX] read into llama.cpp's
kinds, a bad one refused in one line, each task's slice of the eval set taken in order."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from edgepick.cli.cmd_speculate import parse_kind, pick_items
from edgepick.errors import EdgepickError
from edgepick.evaluate.eval_sets import bundled_set_path
from edgepick.evaluate.items import load_eval_set


def _resolve(name: str) -> str:
    return f"/models/{name}.gguf"


def test_kinds_read_as_llama_cpp_names_them():
    assert parse_kind("ngram-mod", _resolve).server_flags() == ["--spec-type", "ngram-mod"]
    assert parse_kind("ngram-mod:16", _resolve).server_flags() == [
        "--spec-type", "ngram-mod", "--spec-ngram-mod-n-max", "16"]
    k = parse_kind("draft:smollm2:8", _resolve)  # `draft` is draft-simple
    assert (k.type, k.model, k.n_max) == ("draft-simple", "/models/smollm2.gguf", 8)
    assert k.tag() == "draft-simple:smollm2:8"


@pytest.mark.parametrize("text, says", [
    ("draft-simple", "needs a draft model"),
    ("ngram-mod:many", "N_MAX a number"),
    ("draft-simple:d:8:9", "expected TYPE[:DRAFT][:N_MAX]"),
])
def test_a_bad_kind_is_one_line(text, says):
    with pytest.raises(EdgepickError) as exc:
        parse_kind(text, _resolve)
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_an_unknown_kind_names_the_known_ones():
    with pytest.raises(ValidationError) as exc:
        parse_kind("medusa", _resolve)
    assert "ngram-mod" in str(exc.value)


def test_each_tasks_slice_in_order_and_an_absent_task_refused():
    items, _ = load_eval_set(bundled_set_path("demo"))
    qa = [it.id for it in items if it.task == "qa"]
    got = pick_items(items, ["qa", "extraction"], 2, 3)
    assert [it.id for it in got[:2]] == qa[3:5]
    assert [it.task for it in got] == ["qa", "qa", "extraction", "extraction"]
    with pytest.raises(EdgepickError, match="no item of it"):
        pick_items(items, ["poetry"], 2, 0)
