"""Fidelity on real models: the tiny 2-block SmolLM2 against itself and its own quantizations."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgepick.errors import EdgepickError
from edgepick.evaluate.fidelity import bundled_text, read_text
from edgepick.evaluate.fidelity import fidelity as _fidelity
from edgepick.inputs import resolve_ref


def fidelity(reference: str, candidate: str, *args, **kw):
    """The models as a user names them, resolved once as the CLI does."""
    return _fidelity(resolve_ref(reference), resolve_ref(candidate), *args, **kw)

CTX = 64
CHUNKS = 3
# One thread: on a shared 2-core machine, two spinning threads wait on each other far more
# than they gain; the figures do not depend on the thread count.
T = 1


def _quantize(src: str, dst: Path, ftype: int) -> str:
    """llama.cpp's own quantizer, in process (the same code as llama-quantize)."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = 2
    rc = llama_cpp.llama_model_quantize(src.encode(), str(dst).encode(), params)
    assert rc == 0, f"quantizing to ftype {ftype} failed"
    return str(dst)


@pytest.fixture(scope="module")
def tiny_quants(tiny_model, tmp_path_factory) -> dict[str, str]:
    import llama_cpp

    d = tmp_path_factory.mktemp("quants")
    return {
        "Q8_0": _quantize(tiny_model, d / "tiny-q8_0.gguf", llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0),
        "Q4_0": _quantize(tiny_model, d / "tiny-q4_0.gguf", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0),
    }


@pytest.fixture(scope="module")
def text() -> Path:
    return bundled_text("fidelity")


def test_model_against_itself_is_exactly_faithful(tiny_model, text, tmp_path):
    r = fidelity(tiny_model, tiny_model, text, ctx=CTX, threads=T, max_chunks=CHUNKS, cache_dir=tmp_path)
    assert r.n_chunks == CHUNKS and r.n_scored == CHUNKS * (CTX - 1 - CTX // 2)
    assert r.kld_mean == 0.0 and r.kld_max == 0.0 and r.kld_p99 == 0.0
    assert r.same_top1 == 1.0
    assert r.ppl_ratio == 1.0 and r.ppl_ref == r.ppl_cand and r.ppl_ref > 1.0
    assert r.rms_dp == 0.0


def test_quantization_error_is_positive_and_ordered(tiny_model, tiny_quants, text, tmp_path):
    q8 = fidelity(tiny_model, tiny_quants["Q8_0"], text, ctx=CTX, threads=T, max_chunks=CHUNKS,
                  cache_dir=tmp_path)
    q4 = fidelity(tiny_model, tiny_quants["Q4_0"], text, ctx=CTX, threads=T, max_chunks=CHUNKS,
                  cache_dir=tmp_path)
    assert q8.reference_cached is False and q4.reference_cached is True
    assert 0 < q8.kld_mean < q4.kld_mean
    assert q8.kld_p99 <= q4.kld_p99
    assert q4.same_top1 <= q8.same_top1 and q4.same_top1 < 1.0
    assert q8.rms_dp > 0 and q4.rms_dp > q8.rms_dp
    assert q8.ppl_ref == q4.ppl_ref  # one reference, read back from the cache
    assert q4.kld_median <= q4.kld_p90 <= q4.kld_p95 <= q4.kld_p99 <= q4.kld_p999 <= q4.kld_max


def test_cached_and_uncached_runs_agree(tiny_model, tiny_quants, text, tmp_path):
    a = fidelity(tiny_model, tiny_quants["Q4_0"], text, ctx=CTX, threads=T, max_chunks=2, cache_dir=tmp_path)
    b = fidelity(tiny_model, tiny_quants["Q4_0"], text, ctx=CTX, threads=T, max_chunks=2, cache_dir=tmp_path)
    c = fidelity(tiny_model, tiny_quants["Q4_0"], text, ctx=CTX, threads=T, max_chunks=2, cache=False)
    assert not a.reference_cached and b.reference_cached and not c.reference_cached
    strip = {"reference_cached"}
    assert a.model_dump(exclude=strip) == b.model_dump(exclude=strip) == c.model_dump(exclude=strip)
    # A longer run reuses the cached chunks and computes only the missing ones.
    d = fidelity(tiny_model, tiny_quants["Q4_0"], text, ctx=CTX, threads=T, max_chunks=3, cache_dir=tmp_path)
    assert d.n_chunks == 3 and not d.reference_cached
    assert len(list((tmp_path).glob("*/chunk_*.npy"))) == 3


def test_token_ids_and_text_give_the_same_figures(tiny_model, text, tmp_path):
    import llama_cpp

    s = read_text(text)[:3000]
    llm = llama_cpp.Llama(tiny_model, vocab_only=True, verbose=False)
    toks = llm.tokenize(s.encode(), add_bos=True, special=False)
    a = fidelity(tiny_model, tiny_model, s, ctx=CTX, threads=T, max_chunks=2, cache=False)
    b = fidelity(tiny_model, tiny_model, toks, ctx=CTX, threads=T, max_chunks=2, cache=False)
    assert a.text_sha256 == b.text_sha256 and a.ppl_ref == b.ppl_ref


def test_vocabulary_mismatch_is_a_one_line_error(tiny_model, gemma3_q4_k_m, tmp_path):
    with pytest.raises(EdgepickError, match="do not share a tokenizer") as exc:
        fidelity(tiny_model, gemma3_q4_k_m, "word " * 400, ctx=CTX, threads=T, max_chunks=1,
                 cache_dir=tmp_path)
    assert "\n" not in str(exc.value)


def test_short_text_and_bad_arguments_are_clear_errors(tiny_model, tmp_path):
    with pytest.raises(EdgepickError, match=f"needs at least {2 * CTX}"):
        fidelity(tiny_model, tiny_model, "too short", ctx=CTX, threads=T, cache=False)
    with pytest.raises(EdgepickError, match="cannot read"):
        fidelity(tiny_model, tiny_model, tmp_path / "missing.txt", ctx=CTX, threads=T, cache=False)
    with pytest.raises(EdgepickError, match="not a bundled model"):
        fidelity("no-such-model", tiny_model, "x", ctx=CTX)
