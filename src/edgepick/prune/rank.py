"""Rank a model's blocks by what removing each one costs on calibration text: the cheap signal
(block influence from hidden states, prune/hidden.py) and the exact one (the KLD of the model
without that block against the model itself, by edgepick.evaluate.fidelity, the measurement the
sensitivity analysis uses), with the Spearman rank correlation between them.

Every per-block KLD and every ranking is stored in the results store (kinds "prune_block" and
"prune_ranking") under a key of everything it depends on, so a rerun measures nothing twice and
`edgepick prune build --drop N` finds the ranking of its source.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from edgepick.backends.llama_cpp import engine_version
from edgepick.errors import EdgepickError
from edgepick.evaluate.fidelity import fidelity
from edgepick.models.gguf_info import read_gguf
from edgepick.progress import ProgressEvent, Tick
from edgepick.prune.blocks import refusal
from edgepick.prune.build import build
from edgepick.prune.hidden import block_influence
from edgepick.records.model_ref import ModelRef
from edgepick.records.prune import BlockRanking, BlockScore
from edgepick.store.identity import file_sha256
from edgepick.store.results import ResultStore

BLOCK_KIND = "prune_block"
RANKING_KIND = "prune_ranking"
SIGNALS = ("influence", "kld")


def _key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def ranks(values: list[float]) -> np.ndarray:
    """Ranks from 1, ties given their mean rank (what Spearman's rho is computed on)."""
    v = np.asarray(values, dtype=float)
    order = np.argsort(v, kind="stable")
    r = np.empty(len(v))
    r[order] = np.arange(1, len(v) + 1)
    for value in np.unique(v):
        tied = v == value
        r[tied] = r[tied].mean()
    return r


def spearman(a: list[float], b: list[float]) -> float | None:
    if len(a) < 3:
        return None
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def least_important(scores: list[float]) -> list[int]:
    """Block indices, lowest score first (ties: the earlier block first)."""
    return sorted(range(len(scores)), key=lambda b: (scores[b], b))


def removal_kld(src: str, blocks: list[int], text: str | Path, *, ctx: int, chunks: int | None,
                threads: int, work: Path, reader=None, sha: str | None = None) -> dict:
    """KLD of `src` without `blocks` against `src`, on `text` (the file is removed after)."""
    path = work / "without.gguf"
    build(src, path, blocks, reader=reader, source_sha256=sha, probe="kld")
    try:
        r = fidelity(ModelRef.file(src), ModelRef.file(str(path)), Path(text), ctx=ctx,
                     threads=threads, max_chunks=chunks)
    finally:
        path.unlink(missing_ok=True)
    return {"kld_mean": r.kld_mean, "kld_p99": r.kld_p99, "same_top1": r.same_top1,
            "n_scored": r.n_scored}


def rank_blocks(src: str, text: str, *, ctx: int = 256, chunks: int | None = 4,
                threads: int = 2, store=None, progress: Tick | None = None,
                work_dir: str | None = None, signals: tuple[str, ...] = SIGNALS
                ) -> BlockRanking:
    """Both signals for every block of `src`, stored; see the module's docstring.
    `signals=("influence",)`: the cheap signal alone (one forward pass per block, no KLD run
    per block; no rank correlation then), unless a ranking with both is already stored."""
    if "influence" not in signals or not set(signals) <= set(SIGNALS):
        raise EdgepickError(f"signals: expected influence, or influence and kld, got {signals}")
    if not Path(text).is_file():
        raise EdgepickError(f"{text}: text file not found")
    reader = read_gguf(src)
    why = refusal(reader)
    if why:
        raise EdgepickError(f"cannot rank blocks for pruning: {why}")
    arch = reader.fields["general.architecture"].contents()
    n = int(reader.fields[f"{arch}.block_count"].contents())
    store = store if store is not None else ResultStore()
    common = {"source": file_sha256(src), "text": file_sha256(text), "ctx": ctx,
              "chunks": chunks, "engine": engine_version()}
    key = _key({**common, "what": "ranking"})
    held = store.get(RANKING_KIND, key)
    if held is not None:
        return BlockRanking(**held)
    with_kld = "kld" in signals
    if not with_kld:
        key = _key({**common, "what": "influence ranking"})
        held = store.get(RANKING_KIND, key)
        if held is not None:
            return BlockRanking(**held)
    tick = progress or (lambda ev: None)
    steps = 2 * n if with_kld else n
    influence, n_tokens = block_influence(
        src, text, ctx=ctx, chunks=chunks, threads=threads, work_dir=work_dir,
        progress=lambda ev: tick(ProgressEvent(ev.done, steps, f"influence: {ev.what}")))
    if not with_kld:
        return _stored(store, BlockRanking(
            key=key, source=src, source_sha256=common["source"], text=text,
            text_sha256=common["text"], ctx=ctx, chunks=chunks, n_tokens=n_tokens,
            blocks=[BlockScore(block=b, influence=v) for b, v in enumerate(influence)],
            by_influence=least_important(influence), signals=["influence"]), src, tick)
    tmp = Path(tempfile.mkdtemp(prefix="edgepick-prune-", dir=work_dir))
    scores = []
    try:
        for b in range(n):
            tick(ProgressEvent(n + b, 2 * n, f"KLD without block {b}"))
            bkey = _key({**common, "block": b})
            m = store.get(BLOCK_KIND, bkey)
            if m is None:
                m = removal_kld(src, [b], text, ctx=ctx, chunks=chunks, threads=threads,
                                work=tmp, reader=reader, sha=common["source"])
                store.put(BLOCK_KIND, bkey, m, label=f"{Path(src).name} without blk.{b}")
            scores.append(BlockScore(block=b, influence=influence[b], kld_mean=m["kld_mean"],
                                     kld_p99=m["kld_p99"], same_top1=m["same_top1"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    klds = [s.kld_mean for s in scores]
    return _stored(store, BlockRanking(
        key=key, source=src, source_sha256=common["source"], text=text,
        text_sha256=common["text"], ctx=ctx, chunks=chunks, n_tokens=n_tokens, blocks=scores,
        spearman=spearman(influence, klds), by_influence=least_important(influence),
        by_kld=least_important(klds)), src, tick)


def _stored(store, ranking: BlockRanking, src: str, tick: Tick) -> BlockRanking:
    tick(ProgressEvent(1, 1, "done"))
    store.put(RANKING_KIND, ranking.key, ranking.model_dump(mode="json"),
              label=f"{Path(src).name} block ranking")
    return ranking


def stored_ranking(store, source_sha256: str, text_sha256: str | None = None,
                   signal: str | None = None) -> BlockRanking | None:
    """The stored ranking of a source (on that text, when given; carrying `signal`, when
    given); the last stored wins."""
    found = None
    for _, payload in store.items(RANKING_KIND):
        if payload.get("source_sha256") == source_sha256 and (
                text_sha256 is None or payload.get("text_sha256") == text_sha256) and (
                signal is None or signal in payload.get("signals", SIGNALS)):
            found = payload
    return BlockRanking(**found) if found else None
