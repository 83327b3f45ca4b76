"""The in-process llama.cpp backend on a real (tiny) model."""

import numpy as np
import pytest

from edgepick.backends import LoadOptions, get_backend
from edgepick.errors import EdgepickError
from edgepick.records import Candidate, RuntimeSettings


@pytest.fixture(scope="module")
def backend(tiny_model):
    b = get_backend("llama_cpp")
    b.load(Candidate(model=tiny_model, settings=RuntimeSettings(n_ctx=256)),
           LoadOptions(need_logits=True))
    yield b
    b.unload()


def test_generates_exactly_n_tokens_with_increasing_arrival_times(backend):
    g = backend.generate("Edge devices run small models", 24, ignore_eos=True)
    assert g.generated_tokens == 24 and len(g.token_times) == 24
    assert all(b >= a for a, b in zip(g.token_times, g.token_times[1:]))
    assert 0 < g.prefill_s <= g.ttft_s
    assert g.decode_tps > 0 and g.finish_reason == "length"


def test_greedy_is_deterministic_and_matches_logits(backend):
    prompt = backend.tokenize("The capital of France is")
    a = backend.generate(prompt, 8, ignore_eos=True)
    b = backend.generate(prompt, 8, ignore_eos=True)
    assert a.text == b.text
    logits = backend.logits(prompt)
    assert logits.shape == (len(prompt), backend.vocabulary().n_vocab)
    first = backend.tokenize(a.text, add_bos=False)[0]
    assert int(np.argmax(logits[-1])) == first


def test_logprobs_are_log_probabilities(backend):
    g = backend.generate("Hello", 5, ignore_eos=True, logprobs=True)
    assert len(g.token_logprobs) == 5 and all(lp <= 0 for lp in g.token_logprobs)


def test_chat_messages_use_the_model_template(backend):
    text = backend.render_chat([{"role": "user", "content": "hi"}])
    assert "<|im_start|>user" in text and text.rstrip().endswith("assistant")


def test_stop_strings_cut_the_text(backend):
    g = backend.generate("1, 2, 3,", 40, ignore_eos=True)
    assert g.text
    stop = g.text[len(g.text) // 2: len(g.text) // 2 + 2]
    if stop.strip():
        cut = backend.generate("1, 2, 3,", 40, ignore_eos=True, stop=[stop])
        assert stop not in cut.text and cut.finish_reason == "stop"


def test_prompt_longer_than_context_is_an_error(backend):
    with pytest.raises(EdgepickError, match="does not fit the context"):
        backend.generate(list(range(1, 300)), 4)


def test_load_errors_are_one_line(tmp_path):
    b = get_backend("llama_cpp")
    with pytest.raises(EdgepickError, match="no such file|not found"):
        b.load(Candidate(model=str(tmp_path / "missing.gguf")))
    with pytest.raises(EdgepickError, match="KV cache type"):
        b.load(Candidate(model=__file__, settings=RuntimeSettings(kv_type="q3")))
    with pytest.raises(EdgepickError, match="unknown backend"):
        get_backend("tensorrt")
