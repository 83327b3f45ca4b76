"""Fidelity per runtime setting (issue 34 item 3): threads and mmap cannot change the answers —
the one check that proves it, on the engine's own logits — while a quantized KV cache can, and
fidelity applies a runtime-axes candidate's settings against the same file at the f16-KV
baseline."""

from __future__ import annotations

import numpy as np

from edgepick.backends import LoadOptions, get_backend
from edgepick.evaluate.fidelity import bundled_text, fidelity
from edgepick.inputs import resolve_ref
from edgepick.records.candidate import Candidate, RuntimeSettings


def _logits(ref, **settings) -> np.ndarray:
    b = get_backend(ref.backend)
    b.load(Candidate(ref=ref, settings=RuntimeSettings(n_ctx=128, n_batch=128, n_ubatch=128,
                                                       **settings)),
           LoadOptions(need_logits=True))
    try:
        toks = b.tokenize(bundled_text().read_text(encoding="utf-8")[:2000], add_bos=True,
                          parse_special=False)[:128]
        return b.logits(toks)
    finally:
        b.unload()


def test_threads_and_mmap_leave_the_logits_byte_identical_and_a_q4_0_cache_does_not():
    ref = resolve_ref("tiny")
    base = _logits(ref, threads=1, mmap=True)
    assert np.array_equal(base, _logits(ref, threads=2, mmap=False))  # bit for bit
    assert not np.array_equal(base, _logits(ref, threads=1, kv_type="q4_0"))


def test_fidelity_applies_the_candidates_settings_against_the_f16_baseline(tmp_path):
    ref = resolve_ref("tiny")
    text = bundled_text()
    q4 = fidelity(ref, ref, text, ctx=128, threads=1, max_chunks=1, cache_dir=tmp_path,
                  runtime=RuntimeSettings(kv_type="q4_0", flash_attn=True))
    t2 = fidelity(ref, ref, text, ctx=128, threads=2, max_chunks=1, cache_dir=tmp_path,
                  runtime=RuntimeSettings(threads=2, mmap=False))
    assert q4.kld_mean > 10 * t2.kld_mean
    assert 0 <= q4.first_divergence_share <= 1 and t2.first_divergence_share == 1.0
    assert t2.same_top1 == 1.0
