"""The onnxruntime_genai backend on the tiny SmolLM2 converted to INT4 (real engine, real model)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from parts import need_module

from cli_runner import run_cli

need_module("onnxruntime_genai")

from edgepick.backends import LoadOptions, base, get_backend, supports  # noqa: E402
from edgepick.errors import EdgepickError  # noqa: E402
from edgepick.records.candidate import Candidate, RuntimeSettings  # noqa: E402
from edgepick.inputs import resolve_ref  # noqa: E402
from edgepick.records.model_ref import ModelRef  # noqa: E402


@pytest.fixture(scope="module")
def og_ref() -> ModelRef:
    ref = resolve_ref("tiny-og-int4")
    assert ref.backend == "onnxruntime_genai"  # resolved from the folder, not from its name
    return ref


@pytest.fixture(scope="module")
def og(og_ref):
    b = get_backend("onnxruntime_genai")
    b.load(Candidate(ref=og_ref, settings=RuntimeSettings(n_ctx=256, threads=2)))
    yield b
    b.unload()


@pytest.fixture(scope="module")
def llama(tiny_model):
    b = get_backend("llama_cpp")
    b.load(Candidate(ref=resolve_ref(tiny_model), settings=RuntimeSettings(n_ctx=256)))
    yield b
    b.unload()


def test_capabilities_are_declared():
    assert supports("onnxruntime_genai", base.LOGITS)
    assert supports("onnxruntime_genai", base.STREAMING)
    assert not supports("onnxruntime_genai", base.CONCURRENT_SEQUENCES)
    b = get_backend("onnxruntime_genai")
    with pytest.raises(EdgepickError, match="decode concurrent sequences"):
        b.load(Candidate(ref=resolve_ref("tiny-og-int4")), LoadOptions(n_seq=2))


def test_same_tokens_and_vocabulary_as_llama_cpp(og, llama):
    from edgepick.convert.verify import CHECK_TEXT

    assert og.tokenize(CHECK_TEXT, add_bos=False) == llama.tokenize(CHECK_TEXT, add_bos=False)
    assert og.tokenize("Hello", add_bos=True) == llama.tokenize("Hello", add_bos=True)
    assert og.vocabulary() == llama.vocabulary()
    msgs = [{"role": "user", "content": "Name a colour."}]
    assert og.render_chat(msgs) == llama.render_chat(msgs)
    assert og.detokenize(og.tokenize("naïve café 端侧", add_bos=False)) == "naïve café 端侧"
    with pytest.raises(EdgepickError, match="always reads special tokens"):
        og.tokenize("a <|im_end|> b", parse_special=False)


def test_greedy_generation_with_timings(og):
    g = og.generate("The weather today is", 12, ignore_eos=True, logprobs=True)
    assert g.generated_tokens == 12 == len(g.token_times) == len(g.token_logprobs)
    assert g.prefill_s is not None and g.prefill_s <= g.token_times[0]
    assert all(b >= a for a, b in zip(g.token_times, g.token_times[1:]))
    assert all(lp <= 0 for lp in g.token_logprobs)
    again = og.generate("The weather today is", 12, ignore_eos=True)
    assert again.text == g.text  # greedy is deterministic
    ids = og.tokenize("The weather today is")
    assert og.generate(ids, 12, ignore_eos=True).text == g.text
    cut = og.generate("The weather today is", 12, ignore_eos=True, stop=[g.text.split()[1]])
    assert cut.finish_reason == "stop" and g.text.split()[1] not in cut.text


def test_logits_agree_with_generation(og):
    ids = og.tokenize("One, two, three,")
    rows = og.logits(ids)
    assert rows.shape == (len(ids), og.vocabulary().n_vocab) and np.isfinite(rows).all()
    first = og.generate(ids, 1, ignore_eos=True)
    assert og.tokenize(first.text, add_bos=False)[0] == int(rows[-1].argmax())


def test_settings_it_cannot_apply_are_refused(og_ref):
    b = get_backend("onnxruntime_genai")
    with pytest.raises(EdgepickError, match="exceeds the build's context length"):
        b.load(Candidate(ref=og_ref, settings=RuntimeSettings(n_ctx=100_000)))
    with pytest.raises(EdgepickError, match="kv_type 'q8_0' cannot be applied"):
        b.load(Candidate(ref=og_ref, settings=RuntimeSettings(kv_type="q8_0")))
    with pytest.raises(EdgepickError, match="not an onnxruntime-genai folder"):
        b.load(Candidate(ref=resolve_ref(str(og_ref.path) + "/model.onnx",
                                            backend="onnxruntime_genai")))


def test_fidelity_against_the_f16_reference_on_the_same_tokenizer(og_ref):
    r = run_cli("fidelity", "-r", "tiny", "-m", "tiny-og-int4", "--ctx", "128", "--chunks", "2",
                "--no-cache", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["kld_mean"] > 0 and res["n_scored"] > 0  # INT4 moves the distribution


def test_consistency_across_engines_shows_first_divergence(tmp_path):
    data = tmp_path / "p.jsonl"
    data.write_text("\n".join(json.dumps({"id": f"q{i}", "task": "qa", "prompt": p,
                                          "reference": "x"})
                              for i, p in enumerate(["Say hello.", "Count to five."])) + "\n")
    r = run_cli("consistency", "-r", "tiny", "-m", "tiny-og-int4", "-d", str(data),
                "--max-tokens", "8", "--threshold", "0", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["n"] == 2 and res["engines"] == ["llama_cpp", "onnxruntime_genai"]
    assert res["n_same_tokens"] == 2  # the same text gives the same token IDs on both engines
    assert all(it["same_prompt_text"] for it in res["items"])
    for it in res["items"]:
        assert it["identical"] == (it["first_divergence"] is None)


def test_import_and_help_work_without_the_engine():
    code = ("import sys; sys.modules['onnxruntime_genai'] = None\n"
            "import edgepick\n"
            "from edgepick.backends import get_backend\n"
            "from edgepick.records.candidate import Candidate\n"
            "from edgepick.errors import EdgepickError\n"
            "try:\n"
            "    get_backend('onnxruntime_genai').load(Candidate(model='tiny'))\n"
            "except EdgepickError as e:\n"
            "    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install 'edgepick[onnx]'" in r.stdout, r.stderr
    assert run_cli("--help").returncode == 0


def test_the_full_bundled_smollm2_converts_and_answers_like_its_llama_cpp_build(smollm2_q4_1):
    """Beyond the 2-block cut: the whole SmolLM2, converted torch-free, keeps llama.cpp's
    tokenizer and, like its llama.cpp build, answers a plain question right."""
    og = get_backend("onnxruntime_genai")
    og.load(Candidate(ref=resolve_ref("smollm2-og-int4"),
                      settings=RuntimeSettings(n_ctx=256, threads=2)))
    llama = get_backend("llama_cpp")
    llama.load(Candidate(ref=resolve_ref(smollm2_q4_1), settings=RuntimeSettings(n_ctx=256)))
    try:
        text = "The capital of France is Paris. 法国的首都是巴黎。"
        assert og.tokenize(text) == llama.tokenize(text)
        ask = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
        a = og.generate(ask, 8, chat=True).text
        b = llama.generate(ask, 8, chat=True).text
        assert "Paris" in a and "Paris" in b
    finally:
        og.unload()
        llama.unload()
