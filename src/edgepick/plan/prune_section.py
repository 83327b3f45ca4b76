"""A quantize entry's `prune:` axis (seed 003 §3.3): each cut a pruned source, written by the
prune stage before fit, whose types the quantize stage then builds like any other candidate's.
Here: the cuts of an entry, their checks against the source's header (one line each, with the
plan's file and line), and the stage that builds them and skips a refused cut's candidates."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from edgepick.errors import EdgepickError
from edgepick.evaluate.fidelity import bundled_text
from edgepick.models.gguf_info import read_gguf
from edgepick.progress import ProgressEvent, Tick
from edgepick.prune import stage as prune
from edgepick.prune.blocks import refusal
from edgepick.prune.build import output_path as pruned_path
from edgepick.prune.stage import PruneBuild, PruneRequest
from edgepick.records.model_ref import ModelRef


@dataclass(frozen=True)
class PruneCut:
    """One cut of one source: `drop` blocks by the `by` ranking, or the `blocks` given."""

    source: ModelRef
    target: str  # the pruned GGUF the candidates' types are quantized from
    tag: str  # in the candidates' names: "drop2", "drop3+17"
    drop: int | None = None
    blocks: tuple[int, ...] | None = None
    by: str = "kld"
    text: str | None = None
    ctx: int = 256
    chunks: int | None = 4

    @property
    def ref(self) -> ModelRef:
        return ModelRef.file(self.target, label=Path(self.target).stem)

    def request(self) -> PruneBuild:
        return PruneBuild(source=self.source, target=self.target, drop=self.drop,
                          blocks=list(self.blocks) if self.blocks else None, by=self.by,
                          text=self.text, ctx=self.ctx, chunks=self.chunks, label=self.tag)


def prune_text(lp, entry) -> str:
    if entry.prune_text == "bundled":
        return str(bundled_text("calibration"))
    return lp.resolve(entry.prune_text)


def prune_cuts(lp, entry, src: ModelRef, models_dir: Path) -> list[PruneCut | None]:
    """The entry's cuts in its order; None stands for the unpruned source (a cut of 0)."""
    stem = Path(str(src.path)).name.removesuffix(".gguf")
    out: list[PruneCut | None] = []
    for cut in entry.prune:
        if cut == 0:
            out.append(None)
        elif isinstance(cut, int):
            out.append(PruneCut(
                source=src, target=str(models_dir / f"{stem}.drop{cut}-{entry.prune_by}.gguf"),
                tag=f"drop{cut}", drop=cut, by=entry.prune_by, text=prune_text(lp, entry),
                ctx=entry.prune_ctx, chunks=entry.prune_chunks))
        else:
            blocks = tuple(sorted(set(cut)))
            out.append(PruneCut(source=src, target=str(pruned_path(str(src.path), list(blocks),
                                                                    models_dir)),
                                tag="drop" + "+".join(map(str, blocks)), blocks=blocks))
    return out


def check_prune(lp, fail: Callable[[tuple, str], None]) -> None:
    """Each pruned entry's source can lose its cuts: the model allows it at all, every count
    leaves a block, every block given exists; its calibration text exists; no imatrix (it names
    the source's blocks, which pruning renumbers)."""
    ranked: dict[str, tuple[int, tuple]] = {}  # source -> the first entry ranking it, how
    for i, q in enumerate(lp.plan.quantize):
        if q.prune == [0]:
            continue
        how = (q.prune_by, prune_text(lp, q), q.prune_ctx, q.prune_chunks)
        counts = any(isinstance(c, int) and c > 0 for c in q.prune)
        first = ranked.setdefault(str(lp.ref(q.source).path), (i, how)) if counts else (i, how)
        if first[1] != how:
            fail(("quantize", i, "prune"), f"quantize[{first[0]}] ranks this source "
                 "otherwise: the cuts of one source share prune_by, prune_text, prune_ctx and "
                 "prune_chunks (their files would collide)")
        if q.imatrix:
            fail(("quantize", i, "imatrix"), "an importance matrix names the source's blocks, "
                 "which pruning renumbers: give it to an entry without prune")
        if any(isinstance(c, int) and c > 0 for c in q.prune) and \
                not Path(prune_text(lp, q)).is_file():
            fail(("quantize", i, "prune_text"),
                 f"'{q.prune_text}': no such text file (or 'bundled')")
        try:
            reader = read_gguf(str(lp.ref(q.source).path))
        except EdgepickError as exc:
            fail(("quantize", i, "source"), str(exc))
            return
        why = refusal(reader)
        if why:
            fail(("quantize", i, "prune"), f"the source cannot be pruned: {why}")
        arch = reader.fields["general.architecture"].contents()
        n = int(reader.fields[f"{arch}.block_count"].contents())
        for j, cut in enumerate(q.prune):
            blocks = [cut] if isinstance(cut, int) else cut
            if isinstance(cut, int) and cut >= n:
                fail(("quantize", i, "prune", j), f"cannot remove {cut} of the source's {n} "
                     "blocks: at least one must stay")
            elif isinstance(cut, list) and (bad := [b for b in blocks if b >= n]):
                fail(("quantize", i, "prune", j), f"block {bad[0]} does not exist: the source "
                     f"has blocks 0 to {n - 1}")
            elif isinstance(cut, list) and len(set(cut)) >= n:
                fail(("quantize", i, "prune", j), f"cannot remove all {n} blocks")


def prune_stage(st, tick: Tick) -> None:
    """Build each cut the run's candidates are quantized from (ranked first, stored); a cut
    the model refuses skips its candidates, with the reason. Says which blocks went, why."""
    cuts: dict[str, tuple[PruneCut, list]] = {}
    for c in st.active():
        if c.prune is not None:
            cuts.setdefault(c.prune.target, (c.prune, []))[1].append(c)
    if not cuts:
        return tick(ProgressEvent(0, 0, "done"))
    req = PruneRequest(builds=[cut.request() for cut, _ in cuts.values()],
                       threads=st.lp.plan.runtime.threads)
    for (cut, cands), res in zip(cuts.values(), prune.run(req, st.store, tick)):
        if res.error:
            for c in cands:
                c.skipped = f"pruning failed: {res.error}"
            st.notes.append(f"prune: {cut.tag} of {cut.source.label} failed: {res.error}")
            continue
        st.notes.append(f"prune: {cut.tag} of {cut.source.label} removes blocks "
                        f"{res.file.removed} of {res.file.blocks_before}"
                        + (f" ({cut.by} ranking on {prune.ranked_on(res.ranking)}"
                           + ("" if res.ranking.spearman is None else
                              f"; influence against KLD, Spearman "
                              f"{res.ranking.spearman:+.2f}") + ")"
                           if res.ranking else " (given in the plan)"))
