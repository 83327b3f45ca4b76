"""The prune stage's entry point: rank each source's blocks on calibration text (stored, see
prune/rank.py) and write each planned cut as a GGUF without its blocks (prune/build.py), before
the quantize stage makes its types from the cut (seed 003 §3.3).

A cut is N blocks chosen by a ranking ("the N least important by KLD") or a list of blocks
given; one source ranked on one text is ranked once for all its cuts. A cut the model cannot
lose is an error of that cut alone; the others are still built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from edgepick.errors import EdgepickError
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.prune.build import build
from edgepick.prune.rank import rank_blocks
from edgepick.records.candidate import DEFAULTS
from edgepick.records.model_ref import ModelRef
from edgepick.records.prune import BlockRanking, PrunedFile

KIND = "prune"
Signal = Literal["kld", "influence"]


class PruneBuild(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: ModelRef
    target: str  # where the pruned GGUF is written
    drop: int | None = Field(None, ge=1)  # the N least important blocks of the ranking
    blocks: list[int] | None = None  # or these blocks of the source
    by: Signal = "kld"  # the ranking `drop` follows
    text: str | None = None  # calibration text the ranking is measured on (with `drop`)
    ctx: int = Field(256, ge=16)
    chunks: int | None = Field(4, ge=1)
    label: str | None = None

    @model_validator(mode="after")
    def _one_choice(self):
        if (self.drop is None) == (self.blocks is None):
            raise ValueError("a cut gives drop (N blocks by a ranking) or blocks, not both")
        if self.drop is not None and not self.text:
            raise ValueError("a cut by ranking needs the calibration text it is ranked on")
        return self


class PruneRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    builds: list[PruneBuild] = Field(..., min_length=1)
    threads: int = Field(DEFAULTS.threads, ge=1)


class PruneOutcome(BaseModel):
    build: PruneBuild
    file: PrunedFile | None = None
    ranking: BlockRanking | None = None  # the ranking that chose the blocks (None: given)
    error: str | None = None  # one refused cut does not stop the others


def ranked_on(r: BlockRanking) -> str:
    """The ranking's data in a few words: 'calibration_text.txt, 4 × 256 tokens'."""
    chunks = "all" if r.chunks is None else str(r.chunks)
    return f"{Path(r.text).name}, {chunks} × {r.ctx} tokens ({r.n_tokens} scored)"


def _signals(by: str) -> tuple[str, ...]:
    return ("influence", "kld") if by == "kld" else ("influence",)


def run(req: PruneRequest, store, progress: Tick = silent) -> list[PruneOutcome]:
    """Rank (or find the stored ranking) and build every cut; each file's record is stored
    under kind "prune", keyed by its path."""
    rankings: dict[tuple, BlockRanking] = {}
    out: list[PruneOutcome] = []
    n = len(req.builds)
    for i, b in enumerate(req.builds):
        what = b.label or Path(b.target).name
        progress(ProgressEvent(i, n, what))
        src = str(b.source.path)
        try:
            ranking = None
            removed = sorted(set(b.blocks or []))
            if b.drop is not None:
                key = (src, b.text, b.ctx, b.chunks, _signals(b.by))
                if key not in rankings:
                    rankings[key] = rank_blocks(
                        src, b.text, ctx=b.ctx, chunks=b.chunks, threads=req.threads,
                        store=store, signals=_signals(b.by),
                        progress=lambda ev: progress(ProgressEvent(
                            i, n, f"{what}: {ev.what} {ev.done}/{ev.total}")))
                ranking = rankings[key]
                removed = sorted(ranking.order(b.by)[:b.drop])
            rec = build(src, b.target, removed,
                        ranking=f"{b.by} ranking {ranking.key}" if ranking else "given",
                        ranked_on=ranked_on(ranking) if ranking else None,
                        spearman=ranking.spearman if ranking else None)
        except (EdgepickError, OSError) as exc:
            out.append(PruneOutcome(build=b, error=str(exc)))
            continue
        if store is not None:
            store.put(KIND, rec.path, rec.model_dump(mode="json"), label=what)
        out.append(PruneOutcome(build=b, file=rec, ranking=ranking))
    progress(ProgressEvent(n, n, "done"))
    return out
