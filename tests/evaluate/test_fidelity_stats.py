"""The statistics of the fidelity metrics on hand-made distributions with closed-form answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgepick.errors import EdgepickError
from edgepick.evaluate.fidelity import plan_chunks
from edgepick.evaluate.fidelity_stats import (compare_rows, log_softmax, mean_and_uncertainty,
                                              median, percentile, reference_rows, summarize)


def _logits(probs: list[list[float]], shift: float = 0.0) -> np.ndarray:
    # Logits are log-probs plus an arbitrary per-row constant: softmax must not care.
    return (np.log(np.asarray(probs, dtype=np.float64)) + shift).astype(np.float32)


def test_kl_divergence_matches_closed_form():
    p = [[0.5, 0.25, 0.25], [0.9, 0.05, 0.05]]
    q = [[0.25, 0.5, 0.25], [0.1, 0.8, 0.1]]
    targets = np.array([1, 0])
    ref = reference_rows(_logits(p, shift=3.0), targets)
    rows = compare_rows(*ref, _logits(q, shift=-7.0), targets)
    expected = [sum(pi * math.log(pi / qi) for pi, qi in zip(pr, qr)) for pr, qr in zip(p, q)]
    assert rows["kld"] == pytest.approx(expected, rel=1e-5)
    # NLL of the actual next token: -log q[target]
    assert rows["nll"] == pytest.approx([-math.log(0.5), -math.log(0.1)], rel=1e-6)
    # Δp = q(target) - p(target)
    assert rows["p_diff"] == pytest.approx([0.5 - 0.25, 0.1 - 0.9], abs=1e-6)
    # top-1: row 0 p→0, q→1 (differ); row 1 p→0, q→1 (differ)
    assert rows["same_top"].tolist() == [False, False]


def test_identical_distributions_give_exact_zeros():
    p = np.random.default_rng(0).dirichlet(np.ones(50), size=20)
    targets = np.arange(20) % 50
    ref = reference_rows(_logits(p.tolist()), targets)
    rows = compare_rows(*ref, _logits(p.tolist()), targets)
    assert np.all(rows["kld"] == 0.0) and np.all(rows["p_diff"] == 0.0)
    assert rows["same_top"].all()


def test_perplexity_of_uniform_distribution_is_vocabulary_size():
    v, n = 40, 30
    logits = np.zeros((n, v), dtype=np.float32)
    targets = np.arange(n) % v
    ref = reference_rows(logits, targets)
    rows = compare_rows(*ref, logits, targets)
    s = summarize(rows["kld"], rows["nll"], ref[1], rows["p_diff"], rows["same_top"])
    assert s["ppl_ref"] == pytest.approx(v, rel=1e-6)
    assert s["ppl_cand"] == pytest.approx(v, rel=1e-6)
    assert s["ppl_ratio"] == pytest.approx(1.0, abs=1e-12)
    assert s["ppl_ref_unc"] == 0.0  # every NLL is the same: no spread
    assert s["n_scored"] == n


def test_log_softmax_normalises_in_float64():
    x = np.array([[1000.0, 1000.0, -1000.0]], dtype=np.float32)
    lp = log_softmax(x)
    assert lp.dtype == np.float64
    assert np.exp(lp).sum() == pytest.approx(1.0, abs=1e-12)
    assert lp[0, 0] == pytest.approx(math.log(0.5))


def test_percentile_and_median_follow_llama_perplexity():
    v = np.sort(np.array([0.0, 1.0, 2.0, 3.0, 10.0], dtype=np.float32))
    # fraction·(n−1) = 0.99·4 = 3.96 → 3 + 0.96·(10 − 3)
    assert percentile(v, 0.99) == pytest.approx(3 + 0.96 * 7, rel=1e-5)
    assert percentile(v, 0.0) == 0.0 and percentile(v, 1.0) == 10.0
    assert median(v) == 2.0
    assert median(np.array([1.0, 2.0, 4.0, 8.0])) == 3.0  # even count: mean of the middle two
    big = np.sort(np.random.default_rng(1).random(1001).astype(np.float32))
    assert percentile(big, 0.9) == pytest.approx(float(np.percentile(big, 90)), rel=1e-5)


def test_mean_and_uncertainty_is_the_standard_error():
    x = np.arange(1.0, 21.0)
    m, se = mean_and_uncertainty(x.sum(), (x * x).sum(), len(x))
    assert m == pytest.approx(x.mean())
    assert se == pytest.approx(x.std() / math.sqrt(len(x) - 1))
    assert mean_and_uncertainty(5.0, 25.0, 1) == (5.0, 0.0)  # too few samples: no error bar


def test_summary_same_top1_and_rms_dp():
    n = 100
    kld = np.full(n, 0.1)
    nll = np.full(n, 1.0)
    same = np.array([True] * 97 + [False] * 3)
    dp = np.array([0.1, -0.1] * 50)
    s = summarize(kld, nll, nll, dp, same)
    assert s["same_top1"] == pytest.approx(0.97)
    assert s["same_top1_unc"] == pytest.approx(math.sqrt(0.97 * 0.03 / 99))
    assert s["rms_dp"] == pytest.approx(0.1)
    assert s["mean_dp"] == pytest.approx(0.0, abs=1e-12)
    assert s["kld_mean"] == pytest.approx(0.1) and s["kld_p99"] == pytest.approx(0.1)


def test_chunks_replace_first_token_with_bos_and_need_two_contexts():
    toks = list(range(100, 100 + 70))
    chunks = plan_chunks(toks, 16, add_bos=True, bos=1)
    assert len(chunks) == 4  # floor(70 / 16)
    assert all(c[0] == 1 for c in chunks)
    assert chunks[1][1:].tolist() == toks[17:32]
    assert [c[0] for c in plan_chunks(toks, 16, add_bos=False, bos=1)] == [100, 116, 132, 148]
    assert len(plan_chunks(toks, 16, add_bos=False, bos=1, max_chunks=2)) == 2
    with pytest.raises(EdgepickError, match="at least 160"):
        plan_chunks(toks, 80, add_bos=False, bos=1)
