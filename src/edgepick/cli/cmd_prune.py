"""`edgepick prune rank|build`: depth pruning, ranked on the user's text (seed 003 §3.3).
See docs/quantize.md ("Pruning")."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from edgepick.cli.cmd_fidelity import _progress
from edgepick.cli.options import STORE_HELP, one_model, open_store
from edgepick.cli.output import console, err_console, human_bytes, print_json
from edgepick.errors import EdgepickError
from edgepick.evaluate.fidelity import bundled_text
from edgepick.inputs import resolve_ref
from edgepick.prune.build import build, output_path, parse_blocks
from edgepick.prune.rank import rank_blocks, stored_ranking
from edgepick.records.candidate import DEFAULTS
from edgepick.store.identity import file_sha256

prune_app = typer.Typer(help="Depth pruning: rank a model's blocks on your calibration text, "
                             "write a GGUF without the least important (docs/quantize.md).",
                        no_args_is_help=True)

MODEL_HELP = "the GGUF to prune (a path or bundled name)"
# one option object for both commands: typer reads it, it holds no state
MODEL_OPTION = typer.Option(None, "--model", "-m", help=MODEL_HELP)
POSITIONAL = typer.Argument(None, hidden=True)  # MODEL given without -m


def _source(model: Optional[list[str]], positional: Optional[str]) -> str:
    ref = resolve_ref(one_model(model, positional, "model"))
    return ref.local_path("pruning needs a local GGUF file")


@prune_app.command("rank")
def rank_cmd(
    model: Optional[list[str]] = MODEL_OPTION,
    src: Optional[str] = POSITIONAL,
    calib: Optional[str] = typer.Option(None, "--calib", help="calibration text (default: the "
                                                              "bundled one)"),
    ctx: int = typer.Option(256, "--ctx", help="tokens per chunk"),
    chunks: int = typer.Option(4, "--chunks", help="chunks of the text measured"),
    threads: int = typer.Option(DEFAULTS.threads, "--threads", help="CPU threads"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Per block: its influence (1 − cos of its input and output hidden states) and the KLD of
    the model without it; both rankings are stored, with their rank correlation."""
    path = _source(model, src)
    text = calib or str(bundled_text("calibration"))
    with _progress(not json_out) as tick:
        r = rank_blocks(path, text, ctx=ctx, chunks=chunks, threads=threads,
                        store=open_store(store, text), progress=tick)
    if json_out:
        print_json(r)
        return
    pos = {b: i for i, b in enumerate(r.by_kld, 1)}
    t = Table("block", "influence", "KLD without it", "KLD P99", "same top-1", "KLD rank",
              title=f"blocks of {Path(path).name}, {r.n_tokens} tokens of {Path(text).name}")
    for s in r.blocks:
        t.add_row(str(s.block), f"{s.influence:.4f}", f"{s.kld_mean:.4f}", f"{s.kld_p99:.3f}",
                  f"{s.same_top1:.3f}", str(pos[s.block]))
    console.print(t)
    rho = "undetermined" if r.spearman is None else f"{r.spearman:+.2f}"
    console.print(f"least important by KLD: {r.by_kld[:6]}; by influence: {r.by_influence[:6]}; "
                  f"Spearman rank correlation {rho} over {len(r.blocks)} blocks")
    console.print(_trust(r.spearman))


def _trust(rho: float | None) -> str:
    if rho is None:
        return "the two signals cannot be compared (too few blocks or no spread)"
    if rho >= 0.7:
        return "the cheap signal orders the blocks much as the KLD does: it can be trusted here"
    if rho >= 0.4:
        return "the cheap signal agrees only loosely with the KLD: prefer the KLD ranking"
    return "the cheap signal does not predict the KLD on this model: use the KLD ranking"


@prune_app.command("build")
def build_cmd(
    model: Optional[list[str]] = MODEL_OPTION,
    src: Optional[str] = POSITIONAL,
    blocks: Optional[str] = typer.Option(None, "--blocks", help="remove these blocks: 3,7,12-14"),
    drop: Optional[int] = typer.Option(None, "--drop", help="remove the N least important "
                                       "blocks of the stored ranking (`edgepick prune rank`)"),
    by: str = typer.Option("kld", "--by", help="with --drop: the ranking to follow, kld or "
                                               "influence"),
    calib: Optional[str] = typer.Option(None, "--calib", help="with --drop: the ranking "
                                        "measured on this text (default: any stored one)"),
    out: Optional[Path] = typer.Option(None, "--out", help="output file (default: "
                                       "<stem>.drop-<blocks>.gguf beside the source)"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Write a GGUF without some blocks: tensors renumbered, per-layer metadata sliced, the
    rest copied byte for byte. A model that cannot lose a block is refused; nothing is written."""
    path = _source(model, src)
    if (drop is None) == (blocks is None):
        raise EdgepickError("give --drop N or --blocks LIST (one of them)")
    if by not in ("kld", "influence"):
        raise EdgepickError(f"--by: expected kld or influence, got '{by}'")
    ranking = "given"
    if drop is not None:
        if drop < 1:
            raise EdgepickError(f"--drop must be at least 1 (got {drop})")
        r = stored_ranking(open_store(store, run=False), file_sha256(path),
                           file_sha256(calib) if calib else None, signal=by)
        if r is None:
            raise EdgepickError(f"{path}: no stored block ranking; run `edgepick prune rank -m "
                                f"{path}` first, or give --blocks")
        removed = sorted(r.order(by)[:drop])
        ranking = f"{by} ranking {r.key}"
    else:
        removed = parse_blocks(blocks)
    dst = out or output_path(path, removed)
    rec = build(path, dst, removed, ranking=ranking)
    if json_out:
        print_json(rec)
        return
    verb = "kept" if rec.skipped else "wrote"
    err_console.print(f"{verb} {rec.path}: {rec.blocks_before - len(rec.removed)} of "
                      f"{rec.blocks_before} blocks (removed {rec.removed}, {ranking}), "
                      f"{human_bytes(rec.size_bytes)}")


def register(app: typer.Typer) -> None:
    app.add_typer(prune_app, name="prune")
