"""Write a GGUF without some of its blocks (depth pruning, seed 003 §3.3).

Tensors of the removed blocks are left out, the others are renumbered, the metadata is rewritten
as prune/blocks.py plans it, and every kept tensor's bytes are copied unchanged (the same type
and values as the source: a pruned Q4_K_M is still llama.cpp's Q4_K_M). The provenance goes in
the file's metadata under `edgepick.prune.*`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import gguf

from edgepick.errors import EdgepickError
from edgepick.models.gguf_fast_reader import fast_reader
from edgepick.models.gguf_info import read_gguf
from edgepick.models.gguf_rewrite import TensorTransform, rewrite_gguf
from edgepick.prune.blocks import plan_removal
from edgepick.records.prune import PrunedFile, PruneFacts
from edgepick.store.identity import file_sha256

PREFIX = "edgepick.prune."


def parse_blocks(text: str) -> list[int]:
    """"3,7,12-14" → [3, 7, 12, 13, 14]; a bad item is one line naming it."""
    out: list[int] = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        lo, sep, hi = item.partition("-")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise EdgepickError(f"--blocks: '{item}' is not a block index or a range a-b") from None
        if last < first:
            raise EdgepickError(f"--blocks: range '{item}' runs backwards")
        out.extend(range(first, last + 1))
    if not out:
        raise EdgepickError("--blocks: no block given")
    return sorted(set(out))


def output_path(src: str | Path, removed: list[int], out_dir: str | Path | None = None) -> Path:
    """`<source stem>.drop-<blocks>.gguf` beside the source, or in `out_dir`."""
    src = Path(src)
    tag = "-".join(str(b) for b in sorted(removed))
    if len(tag) > 60:
        tag = f"{len(removed)}b-{hashlib.sha256(tag.encode()).hexdigest()[:8]}"
    return Path(out_dir or src.parent) / f"{src.stem}.drop-{tag}.gguf"


def provenance(path: str | Path) -> dict | None:
    """The `edgepick.prune.*` metadata of a file, or None for a file this module did not write
    (a GGUF without it, or not a GGUF at all)."""
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF":
            return None
    reader = fast_reader(str(path))
    found = {k[len(PREFIX):]: f.contents() for k, f in reader.fields.items()
             if k.startswith(PREFIX)}
    return found or None


def facts(path: str | Path) -> PruneFacts | None:
    """What a file's metadata says of its pruning, or None for a file no pruning wrote (or
    a measurement copy). The ranking is named by its signal: "kld ranking <key>" → "kld"."""
    prov = provenance(path)
    if not prov or "removed" not in prov or prov.get("probe"):
        return None
    ranking = str(prov.get("ranking", "given")).split(" ")[0]
    rho = prov.get("spearman")
    return PruneFacts(removed=[int(b) for b in prov["removed"]],
                      blocks_before=int(prov.get("source_blocks", 0)), ranking=ranking,
                      ranked_on=prov.get("ranked_on"),
                      spearman=None if rho is None else round(float(rho), 4))


def _build_key(source_sha: str, removed: list[int], probe: str | None) -> str:
    blob = json.dumps({"source": source_sha, "removed": removed, "probe": probe}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def build(src: str | Path, dst: str | Path, removed: list[int], *, ranking: str = "given",
          transform: TensorTransform | None = None, probe: str | None = None,
          source_sha256: str | None = None, reader: Any = None, ranked_on: str | None = None,
          spearman: float | None = None) -> PrunedFile:
    """Write `src` without the blocks `removed` to `dst`. Refused (EdgepickError, one line,
    nothing written) when the model cannot lose them. `transform`/`probe`: a measurement copy
    whose tensors are changed (named by `probe`), never a candidate. `ranked_on`, `spearman`:
    the ranking's text and its signals' agreement, kept in the metadata. An existing `dst` built
    from the same source and blocks is kept; any other existing file is not overwritten."""
    src, dst = Path(src), Path(dst)
    reader = reader if reader is not None else read_gguf(src)
    plan = plan_removal(reader, removed)
    sha = source_sha256 or file_sha256(str(src))
    key = _build_key(sha, plan.removed, probe)
    if dst.exists():
        if dst.resolve() == src.resolve():
            raise EdgepickError(f"{dst}: the output would overwrite the source")
        old = provenance(dst)
        if old is None:
            raise EdgepickError(f"{dst}: exists and is not a pruned build; not overwriting it "
                                "(remove it or choose another --out)")
        if old.get("build_key") == key:
            return _record(dst, src, sha, plan, ranking, skipped=True)
    kv = dict(plan.kv)
    s, u32, arr = gguf.GGUFValueType.STRING, gguf.GGUFValueType.UINT32, gguf.GGUFValueType.ARRAY
    kv[PREFIX + "source_sha256"] = (sha, s)
    kv[PREFIX + "source_blocks"] = (plan.n_blocks, u32)
    kv[PREFIX + "removed"] = (plan.removed, arr, u32)
    kv[PREFIX + "ranking"] = (ranking, s)
    kv[PREFIX + "build_key"] = (key, s)
    if probe:
        kv[PREFIX + "probe"] = (probe, s)
    if ranked_on:
        kv[PREFIX + "ranked_on"] = (ranked_on, s)
    if spearman is not None:
        kv[PREFIX + "spearman"] = (float(spearman), gguf.GGUFValueType.FLOAT32)
    dst.parent.mkdir(parents=True, exist_ok=True)
    rewrite_gguf(reader, dst, keep=plan.keeps, rename=plan.rename, transform=transform,
                 kv_overrides=kv)
    return _record(dst, src, sha, plan, ranking)


def _record(dst: Path, src: Path, sha: str, plan, ranking: str,
            skipped: bool = False) -> PrunedFile:
    return PrunedFile(path=str(dst), source=str(src), source_sha256=sha,
                      architecture=plan.architecture, blocks_before=plan.n_blocks,
                      removed=plan.removed, ranking=ranking, size_bytes=dst.stat().st_size,
                      sha256=file_sha256(str(dst)), changed_keys=sorted(plan.kv), skipped=skipped)
