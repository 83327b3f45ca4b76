"""The bundled fidelity/calibration texts: long enough, bilingual, varied, and disjoint."""

from __future__ import annotations

import json
import re

import pytest

from edgepick.errors import EdgepickError
from edgepick.evaluate.fidelity import bundled_text, read_text


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    import llama_cpp

    llm = llama_cpp.Llama(tiny_model, vocab_only=True, verbose=False)  # SmolLM2's tokenizer
    return lambda s: llm.tokenize(s.encode("utf-8"), add_bos=True, special=False)


@pytest.mark.parametrize("name,minimum", [("fidelity", 20_000), ("calibration", 10_000)])
def test_texts_are_long_enough_in_smollm2_tokens(tokenizer, name, minimum):
    assert len(tokenizer(read_text(bundled_text(name)))) >= minimum


@pytest.mark.parametrize("name", ["fidelity", "calibration"])
def test_texts_mix_chinese_and_english_and_registers(name):
    text = read_text(bundled_text(name))
    cjk = len(re.findall(r"[\u4e00-\u9fff]", text))
    latin_words = len(re.findall(r"[A-Za-z]{3,}", text))
    assert cjk > 3000 and latin_words > 1500
    assert "```" in text  # some code
    json_lines = [ln for ln in text.splitlines() if ln.startswith("{") and ln.endswith("}")]
    assert json_lines and all(isinstance(json.loads(ln), dict) for ln in json_lines)
    assert re.search(r"\d+\.\d+", text)  # numbers with decimals
    assert re.search(r"^\S+：|^[A-Z][a-z]+: ", text, re.M)  # dialogue turns


def test_evaluation_and_calibration_texts_are_disjoint():
    def paragraphs(name):
        return {p.strip() for p in read_text(bundled_text(name)).split("\n\n") if len(p.strip()) > 40}

    assert not paragraphs("fidelity") & paragraphs("calibration")


def test_unknown_bundled_text_is_an_error():
    with pytest.raises(EdgepickError, match="no bundled text"):
        bundled_text("nope")
