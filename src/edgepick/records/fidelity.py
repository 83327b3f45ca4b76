"""Fidelity of a candidate to its reference model, and the greedy consistency test
(docs/fidelity.md).

Field definitions follow llama.cpp's `llama-perplexity --kl-divergence` (docs/fidelity.md).
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class FidelityResult(BaseModel):
    reference: str
    candidate: str
    text_sha256: str  # of the token ids that were scored (text tokenized by the reference)
    n_tokens_text: int  # tokens in the whole text
    ctx: int
    n_chunks: int
    n_scored: int  # positions scored: n_chunks × (ctx − 1 − ctx/2)
    add_bos: bool
    # perplexity = exp(mean negative log-likelihood of the actual next token); ± one std. error
    ppl_ref: float
    ppl_ref_unc: float
    ppl_cand: float
    ppl_cand_unc: float
    ppl_ratio: float  # ppl_cand / ppl_ref
    ppl_ratio_unc: float
    ln_ppl_ratio: float
    ln_ppl_ratio_unc: float
    # KL(reference ‖ candidate) of the next-token distributions over the full vocabulary, nats
    kld_mean: float
    kld_mean_unc: float
    kld_median: float
    kld_p90: float
    kld_p95: float
    kld_p99: float
    kld_p999: float
    kld_max: float
    same_top1: float  # share of positions where both models' most likely token is the same
    same_top1_unc: float
    rms_dp: float  # RMS of p_cand(actual next token) − p_ref(actual next token)
    rms_dp_unc: float
    mean_dp: float
    engine: str = ""
    reference_cached: bool = False  # the reference's log-probabilities came from the cache
    # How far into a chunk's scored span the candidate's top-1 token first differs from the
    # reference's, as a share of the span, averaged over chunks (1.0: never within the span);
    # a greedy answer follows the reference up to that token. None: stored before it was.
    first_divergence_share: float | None = None


class StoredFidelity(FidelityResult):
    """A fidelity row as the fidelity stage stores it (evaluate/fidelity_stage.py): the result
    and the candidate's display name."""

    name: str | None = None
    variant: str | None = None  # a runtime-axes candidate's settings (RuntimeSettings.variant)


class ConsistencyItem(BaseModel):
    id: str
    identical: bool
    first_divergence: int | None  # index of the first generated token that differs; None if same
    ref_tokens: int
    cand_tokens: int
    ref_text: str
    cand_text: str
    # Across engines (seed 000 §5.4: conversion changes tokenizers and post-processing): the
    # candidate's prompt + answer text tokenized by both engines, first differing token ID
    # (None: the same IDs), and whether both chat templates rendered the same prompt text.
    token_divergence: int | None = None
    same_prompt_text: bool = True


class ConsistencyResult(BaseModel):
    reference: str
    candidate: str
    data: str
    max_tokens: int
    threshold: float
    n: int
    n_identical: int
    identical_share: float
    mean_first_divergence: float | None  # over the diverging items only
    passed: bool
    items: list[ConsistencyItem] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)  # bad input lines, one message each
    engines: list[str] = Field(default_factory=list)  # [reference's, candidate's]
    n_same_tokens: int | None = None  # items whose text both engines tokenize the same
