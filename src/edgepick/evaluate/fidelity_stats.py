"""The per-position quantities and summary statistics of llama.cpp's KL-divergence mode.

Every definition mirrors tools/perplexity/perplexity.cpp (llama.cpp, pinned with the engine) so
that our figures can be compared with `llama-perplexity --kl-divergence` one for one; where we
differ on purpose (float64, the full vocabulary) the reason is noted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# Rows handled at once: bounds the float64 temporaries to a few × ROWS × n_vocab × 8 bytes.
ROWS = 64


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float64 (llama.cpp sums exp in double too)."""
    x = np.asarray(logits, dtype=np.float64)
    m = x.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
    return x - m - lse


def log_probs32(logits: np.ndarray) -> np.ndarray:
    """Log-probs computed in float64, then held as float32 by BOTH models.

    The reference's are stored as float32 (half the cache); rounding the candidate's the same
    way makes a model compared with itself give exactly KLD 0, Δp 0 and a PPL ratio of 1.
    """
    return log_softmax(logits).astype(np.float32)


def reference_rows(logits: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the reference's scored rows: float32 log-probs, NLL of the target, argmax.

    The log-probs are what the cache stores. They are float32 whether or not a cache is used, so
    a cached run and a fresh run give the same figures bit for bit.
    """
    n = logits.shape[0]
    logp = np.empty(logits.shape, dtype=np.float32)
    nll = np.empty(n, dtype=np.float64)
    for a in range(0, n, ROWS):
        lp = log_probs32(logits[a:a + ROWS])
        logp[a:a + ROWS] = lp
        nll[a:a + ROWS] = -lp[np.arange(lp.shape[0]), targets[a:a + ROWS]].astype(np.float64)
    top = np.argmax(logits, axis=-1).astype(np.int32)  # first maximum, as llama.cpp's strict '>'
    return logp, nll, top


def compare_rows(ref_logp: np.ndarray, ref_nll: np.ndarray, ref_top: np.ndarray,
                 cand_logits: np.ndarray, targets: np.ndarray) -> dict[str, np.ndarray]:
    """Per position: KL(ref ‖ cand), the candidate's NLL, Δp of the target, same top token.

    llama.cpp stores the reference's log-probs as 16-bit integers over the top 16 nats and drops
    tokens with log p_ref ≤ −16 from the KL sum; we keep the full vocabulary in float64 (the
    dropped mass is < n_vocab·e^−16, a difference far below the tolerance we check against).
    """
    n = cand_logits.shape[0]
    kld = np.empty(n, dtype=np.float64)
    nll = np.empty(n, dtype=np.float64)
    for a in range(0, n, ROWS):
        lq = log_probs32(cand_logits[a:a + ROWS]).astype(np.float64)
        lp = np.asarray(ref_logp[a:a + ROWS], dtype=np.float64)
        kld[a:a + ROWS] = (np.exp(lp) * (lp - lq)).sum(axis=-1)
        nll[a:a + ROWS] = -lq[np.arange(lq.shape[0]), targets[a:a + ROWS]]
    top = np.argmax(cand_logits, axis=-1)
    return {
        "kld": kld,
        "nll": nll,
        "p_diff": np.exp(-nll) - np.exp(-np.asarray(ref_nll, dtype=np.float64)),
        "same_top": top == ref_top,
    }


def mean_and_uncertainty(total: float, total2: float, count: int) -> tuple[float, float]:
    """Mean and its standard error, exactly as perplexity.cpp (no error under 11 samples)."""
    if count < 1:
        return 0.0, 0.0
    f = total / count
    df = total2 / count - f * f
    df = math.sqrt(df / (count - 1)) if df > 0 and count > 10 else 0.0
    return f, df


def covariance(a: float, b: float, ab: float, count: int) -> float:
    if count < 10:
        return 0.0
    return (ab / count - (a / count) * (b / count)) / (count - 1)


def percentile(sorted_values: np.ndarray, fraction: float) -> float:
    """perplexity.cpp's percentile: linear interpolation at fraction·(n−1), in float32."""
    v = sorted_values
    f = np.float32(fraction)
    if f <= 0:
        return float(v[0])
    if f >= 1:
        return float(v[-1])
    p = np.float32(f * np.float32(len(v) - 1))
    ip = int(p)
    p = np.float32(p - ip)
    return float((1 - p) * v[ip] + p * v[min(ip + 1, len(v) - 1)])


def median(sorted_values: np.ndarray) -> float:
    v = sorted_values
    n = len(v)
    return float(0.5 * (v[n // 2] + v[n // 2 - 1])) if n % 2 == 0 else float(v[n // 2])


@dataclass
class Accumulator:
    """Collects per-position values chunk by chunk, then summarises them like perplexity.cpp."""

    kld: list[np.ndarray] = field(default_factory=list)
    nll: list[np.ndarray] = field(default_factory=list)
    nll_ref: list[np.ndarray] = field(default_factory=list)
    p_diff: list[np.ndarray] = field(default_factory=list)
    same_top: list[np.ndarray] = field(default_factory=list)

    def add(self, rows: dict[str, np.ndarray], ref_nll: np.ndarray) -> None:
        self.kld.append(rows["kld"])
        self.nll.append(rows["nll"])
        self.nll_ref.append(np.asarray(ref_nll, dtype=np.float64))
        self.p_diff.append(rows["p_diff"])
        self.same_top.append(rows["same_top"])

    def summary(self) -> dict[str, float | int]:
        return summarize(np.concatenate(self.kld), np.concatenate(self.nll),
                         np.concatenate(self.nll_ref), np.concatenate(self.p_diff),
                         np.concatenate(self.same_top))


def summarize(kld: np.ndarray, nll: np.ndarray, nll_ref: np.ndarray, p_diff: np.ndarray,
              same_top: np.ndarray) -> dict[str, float | int]:
    """The figures of perplexity.cpp's final report, from per-position values."""
    n = int(len(kld))
    if n == 0:
        raise ValueError("no scored positions")
    lc, lc_unc = mean_and_uncertainty(float(nll.sum()), float((nll * nll).sum()), n)
    lr, lr_unc = mean_and_uncertainty(float(nll_ref.sum()), float((nll_ref * nll_ref).sum()), n)
    cov = covariance(float(nll.sum()), float(nll_ref.sum()), float((nll * nll_ref).sum()), n)
    ratio_unc = math.sqrt(max(lc_unc ** 2 + lr_unc ** 2 - 2.0 * cov, 0.0))
    k_mean, k_unc = mean_and_uncertainty(float(kld.sum()), float((kld * kld).sum()), n)
    d2 = p_diff * p_diff
    mse, mse_unc = mean_and_uncertainty(float(d2.sum()), float((d2 * d2).sum()), n)
    rms = math.sqrt(mse)
    top = float(np.count_nonzero(same_top)) / n
    ks = np.sort(kld.astype(np.float32))  # perplexity.cpp keeps per-position KLD as float
    return {
        "n_scored": n,
        "ppl_cand": math.exp(lc), "ppl_cand_unc": math.exp(lc) * lc_unc,
        "ppl_ref": math.exp(lr), "ppl_ref_unc": math.exp(lr) * lr_unc,
        "ln_ppl_ratio": lc - lr, "ln_ppl_ratio_unc": ratio_unc,
        "ppl_ratio": math.exp(lc - lr), "ppl_ratio_unc": math.exp(lc - lr) * ratio_unc,
        "kld_mean": k_mean, "kld_mean_unc": k_unc,
        "kld_median": median(ks),
        "kld_p90": percentile(ks, 0.90), "kld_p95": percentile(ks, 0.95),
        "kld_p99": percentile(ks, 0.99), "kld_p999": percentile(ks, 0.999),
        "kld_max": float(ks[-1]),
        "same_top1": top,
        "same_top1_unc": math.sqrt(top * (1 - top) / (n - 1)) if n > 1 else 0.0,
        "rms_dp": rms, "rms_dp_unc": 0.5 / rms * mse_unc if rms > 0 else 0.0,
        "mean_dp": float(p_diff.mean()),
    }
