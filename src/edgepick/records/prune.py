"""Records of depth pruning: a file built without some blocks, and a ranking of the blocks by
what removing each one alone costs on calibration text."""

from __future__ import annotations

from pydantic import BaseModel, Field


class PrunedFile(BaseModel):
    path: str
    source: str
    source_sha256: str
    architecture: str
    blocks_before: int
    removed: list[int]  # block indices of the source, ascending
    ranking: str  # what chose the blocks: "given", or "<signal> ranking <key>"
    size_bytes: int
    sha256: str
    changed_keys: list[str] = Field(default_factory=list)  # metadata rewritten for the new depth
    skipped: bool = False  # an identical file was already there


class BlockScore(BaseModel):
    block: int
    influence: float | None = None  # 1 - mean cos(h_in, h_out) over the text's tokens
    kld_mean: float | None = None  # KL(source ‖ source without this block), nats per position
    kld_p99: float | None = None
    same_top1: float | None = None


class BlockRanking(BaseModel):
    """Both signals per block; `by_influence` / `by_kld` list the blocks least important first
    (the ones to remove first)."""

    key: str  # the store key (source, text, ctx, chunks, engine)
    source: str
    source_sha256: str
    text: str
    text_sha256: str
    ctx: int
    chunks: int | None
    n_tokens: int  # tokens the influence was averaged over
    blocks: list[BlockScore]
    spearman: float | None = None  # rank correlation of the two signals over the blocks
    by_influence: list[int]
    by_kld: list[int] = Field(default_factory=list)  # empty: ranked by influence alone
    signals: list[str] = Field(default_factory=lambda: ["influence", "kld"])

    def order(self, signal: str) -> list[int]:
        return self.by_kld if signal == "kld" else self.by_influence


class PruneFacts(BaseModel):
    """What a candidate's file says of its pruning (its `edgepick.prune.*` metadata, which
    llama-quantize copies into every build made from it): for the report and deploy.yaml."""

    removed: list[int]  # block indices of the source, ascending
    blocks_before: int
    ranking: str  # "kld", "influence" (the signal whose ranking chose) or "given"
    ranked_on: str | None = None  # the text the ranking was measured on, and how much of it
    spearman: float | None = None  # the two signals' rank correlation on that text


class FrontPoint(BaseModel):
    """One build on the size-against-KLD plane of the report's pruning section."""

    candidate: str
    quant: str | None = None
    size_bytes: int | None = None  # the file's bytes
    kld_mean: float | None = None  # against the unpruned source; None: not measured
    pruned: PruneFacts | None = None
    on_front: bool = False
    dominated_by: str | None = None  # the build that is smaller and closer, when one is


class PruneFront(BaseModel):
    """Pruned and quantized builds on one front, and what the decide stage says of it in
    each language (report/prune_section.py renders it; it decides nothing)."""

    points: list[FrontPoint]
    verdict: str  # "unmeasured" | "dominated" | "on_front"
    words: dict[str, str] = Field(default_factory=dict)  # lang -> the sentence
