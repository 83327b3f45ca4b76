"""`edgepick quantize`, `edgepick imatrix`, `edgepick sensitivity`: the quantization lab."""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from edgepick.cli.options import STORE_HELP, merged, one_model, open_store, split_list
from edgepick.cli.output import console, err_console, human_bytes, print_json
from edgepick.errors import EdgepickError
from edgepick.evaluate.fidelity import bundled_text
from edgepick.inputs import resolve_ref
from edgepick.progress import ProgressEvent
from edgepick.quantize.imatrix import compute_imatrix
from edgepick.quantize.ladder import (parse_types, quantized_tensor_types, requantize_warning,
                                      spec_of)
from edgepick.quantize.recipe import (auto_recipe, budget_bytes, build_recipe, load_recipe,
                                      recipe_output, recipe_path)
from edgepick.quantize.sensitivity import analyze
from edgepick.quantize.stage import QuantizeRequest, run
from edgepick.quantize.units import ggml_type_of
from edgepick.records.candidate import DEFAULTS

DEFAULT_TYPES = "F16,Q8_0,Q6_K,Q5_K_M,Q5_0,Q4_K_M,Q4_1,Q4_0,Q3_K_M,Q2_K"

# The sensitivity analysis's knobs: `sensitivity` runs it and `quantize --recipe auto` runs it to
# choose its recipe, so both take the same options with the same defaults.
_PANEL = "Sensitivity analysis (quantize: with --recipe auto)"
LowOpt = Annotated[str, typer.Option(
    "--low", rich_help_panel=_PANEL,
    help="the low type: each unit in turn is lowered to it; a recipe's less sensitive units")]
HighOpt = Annotated[str, typer.Option(
    "--high", rich_help_panel=_PANEL,
    help="the high type: every other unit; a recipe's sensitive units")]
TextOpt = Annotated[Optional[str], typer.Option(
    "--text", rich_help_panel=_PANEL,
    help="calibration text the KLD is measured on (default: the bundled one)")]
ByOpt = Annotated[str, typer.Option("--by", rich_help_panel=_PANEL, help="units: block | class")]
CtxOpt = Annotated[int, typer.Option("--ctx", rich_help_panel=_PANEL, help="tokens per chunk")]
ChunksOpt = Annotated[int, typer.Option("--chunks", rich_help_panel=_PANEL,
                                        help="chunks of the text scored per unit")]


@contextmanager
def _progress() -> Iterator[Progress]:
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=err_console, transient=True)
    with bar:
        yield bar


def _fallback_summary(fallbacks: list) -> str:
    if not fallbacks:
        return "-"
    groups = Counter((f.wanted, f.got, f.ncols, f.block) for f in fallbacks)
    return "; ".join(f"{n}× {w}→{g} (ncols {c} not divisible by {b})"
                     for (w, g, c, b), n in groups.most_common())


def _files_table(files: list, title: str) -> Table:
    t = Table("file", "type", "size", "bpw", "fallbacks", "", title=title)
    for f in files:
        t.add_row(Path(f.path).name, f.type, human_bytes(f.size_bytes), f"{f.bpw:.2f}",
                  _fallback_summary(f.fallbacks), "reused" if f.skipped else "built")
    return t


def _file_json(f) -> dict:
    d = f.model_dump(mode="json")
    return {"path": d.pop("path"), "type": d.pop("type"), "size_bytes": d.pop("size_bytes"),
            "bpw": d.pop("bpw"), "fallbacks": d.pop("fallbacks"), **d}


def _warn_requantize(src: str) -> None:
    quantized = quantized_tensor_types(src)
    if quantized:
        err_console.print(f"[bold red]WARNING: requantizing.[/] {requantize_warning(src, quantized)}",
                          highlight=False, soft_wrap=True)


def _default_text(text: Optional[str], which: str) -> str:
    if text:
        return text

    return str(bundled_text(which))


def _source(model: list[str] | None, src: str | None):
    """The source model's path: `-m`, or the deprecated positional form; a GGUF is required."""
    ref = resolve_ref(one_model(model, src, "source model"))
    spec_of(ref.local_path("quantizing needs a local GGUF file"))  # one-line error for a missing file or one that is not a GGUF
    return ref


def _sensitivity(src, low, high, text, by, ctx, chunks, threads, imatrix, store_path):
    store = open_store(store_path)
    with store, _progress() as bar:
        task = bar.add_task("sensitivity", total=None)

        def on_unit(ev: ProgressEvent) -> None:
            bar.update(task, completed=ev.done, total=ev.total,
                       description=f"sensitivity: {ev.what} at {low}" if ev.what else "sensitivity")

        return analyze(src, low=low, high=high, text=text, by=by, ctx=ctx, chunks=chunks,
                       threads=threads, imatrix=imatrix, store=store, on_unit=on_unit)


def quantize(
    model: Optional[list[str]] = typer.Option(None, "--model", "-m", help="source GGUF (F32/F16/BF16 ideally) or bundled name"),
    src: Optional[str] = typer.Argument(None, hidden=True),
    quant: Optional[list[str]] = typer.Option(None, "--quant", help=f"ladder of llama.cpp "
                                              f"file types [default: {DEFAULT_TYPES}]"),
    types: Optional[list[str]] = typer.Option(None, "--types", hidden=True),
    out: str = typer.Option("quantized", "--out", help="output folder"),
    imatrix: Optional[str] = typer.Option(None, "--imatrix", help="importance matrix file "
                                          "(from `edgepick imatrix`)"),
    recipe: Optional[str] = typer.Option(None, "--recipe", help="'auto' (choose from "
                                         "sensitivity) or a recipe YAML to rebuild"),
    low: LowOpt = "Q4_0",
    high: HighOpt = "Q8_0",
    budget: Optional[str] = typer.Option(None, "--budget", help="recipe auto: file size "
                                         "(95MB, 90MiB), bits per weight (4.9bpw) or a "
                                         "multiple of the uniform --low file (1.15x)"),
    text: TextOpt = None,
    by: ByOpt = "block",
    ctx: CtxOpt = 512,
    chunks: ChunksOpt = 4,
    threads: int = typer.Option(DEFAULTS.threads, "--threads", help="CPU threads"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Build a quantization ladder, or a mixed-precision file from a recipe, with llama.cpp."""
    source = _source(model, src)
    src = str(source.path)
    types = merged(split_list(quant), split_list(types), "--types", "--quant") or None
    if recipe is not None:
        if types is not None:
            raise EdgepickError("--quant and --recipe are exclusive: a recipe builds one file")
        _quantize_recipe(src, recipe, out, imatrix, low, high, budget, text, by, ctx, chunks,
                         threads, store, json_out)
        return
    _quantize_ladder(source, src, types, out, imatrix, threads, store, json_out)


def _quantize_ladder(source, src: str, types: list[str] | None, out: str, imatrix, threads: int,
                     store, json_out: bool) -> None:
    names = parse_types(",".join(types or [DEFAULT_TYPES]))
    _warn_requantize(src)
    with _progress() as bar:
        task = bar.add_task("quantize", total=len(names))

        def tick(ev: ProgressEvent) -> None:
            n = ev.total or 0
            bar.update(task, completed=ev.done,
                       description=f"{ev.what} ({min(ev.done + 1, n)}/{n})")

        def on_tensor(ftype: str):
            sub = bar.add_task(f"  {ftype} tensors", total=None)

            def step(ev: ProgressEvent) -> None:
                bar.update(sub, completed=ev.done, total=ev.total)
                if ev.total is not None and ev.done >= ev.total:
                    bar.remove_task(sub)
            return step

        req = QuantizeRequest.ladder(source, names, out, imatrix=imatrix,
                                     threads=threads)
        with open_store(store) as rs:
            outcomes = run(req, rs, tick, on_tensor=on_tensor)
    failed = [o for o in outcomes if o.error]
    for o in failed:
        err_console.print(f"[bold red]{o.build.qtype} failed:[/] {o.error}", highlight=False,
                          soft_wrap=True)
    files = [o.file for o in outcomes if o.file is not None]
    if failed and not files:
        raise EdgepickError(f"every build failed; first: {failed[0].error}")
    if json_out:
        print_json([_file_json(f) for f in files])
    else:
        console.print(_files_table(files, f"quantized from {src} into {out}"))
    if failed:
        raise typer.Exit(code=1)

def _quantize_recipe(src, recipe, out, imatrix, low, high, budget, text, by, ctx, chunks,
                     threads, store, json_out) -> None:
    _warn_requantize(src)
    if recipe == "auto":
        if not budget:
            raise EdgepickError("--recipe auto needs --budget (e.g. 1.15x, 95MB or 4.9bpw)")
        text = _default_text(text, "calibration")
        limit = budget_bytes(src, budget, low, threads, imatrix)
        report = _sensitivity(src, low, high, text, by, ctx, chunks, threads, imatrix, store)
        rec = auto_recipe(src, report, budget, limit, imatrix)
    else:
        rec = load_recipe(recipe)
    with _progress() as bar:
        task = bar.add_task("mixed build tensors", total=None)
        built = build_recipe(src, rec, out, imatrix=imatrix, threads=threads,
                             on_progress=lambda ev: bar.update(task, completed=ev.done,
                                                               total=ev.total))
    rpath = str(recipe_path(recipe_output(src, rec, out)))
    over = rec.budget_bytes is not None and built.size_bytes > rec.budget_bytes
    if json_out:
        print_json({**_file_json(built), "recipe": rpath,
                    "budget_bytes": rec.budget_bytes, "over_budget": over,
                    "units": [u.model_dump() for u in rec.units]})
        return
    console.print(_files_table([built], f"mixed precision from {src} into {out}"))

    kept = [u.unit for u in rec.units if u.type == ggml_type_of(rec.high)]
    console.print(f"kept at {rec.high}: {', '.join(kept) or 'none'}; rest at {rec.low}")
    if rec.budget_bytes:
        console.print(f"budget {human_bytes(rec.budget_bytes)} ({rec.budget}); file "
                      f"{human_bytes(built.size_bytes)}; predicted "
                      f"{human_bytes(rec.predicted_size_bytes)}")
    if over:
        err_console.print("[bold yellow]warning:[/] the file is larger than the budget")
    console.print(f"recipe: {rpath}")

def imatrix(
    model: Optional[list[str]] = typer.Option(None, "--model", "-m", help="source GGUF (the model you will quantize)"),
    src: Optional[str] = typer.Argument(None, hidden=True),
    text: str = typer.Option(..., "--text", help="calibration text (real inputs)"),
    out: Optional[str] = typer.Option(None, "--out", help="output file "
                                      "[default: <source stem>.imatrix.gguf next to it]"),
    ctx: int = typer.Option(512, "--ctx", help="tokens per chunk"),
    chunks: Optional[int] = typer.Option(None, "--chunks", help="chunks to use [default: all]"),
    threads: int = typer.Option(DEFAULTS.threads, "--threads", help="CPU threads"),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Compute an importance matrix from calibration text with llama-imatrix."""
    src = str(_source(model, src).path)
    with err_console.status(f"llama-imatrix over {text} (ctx {ctx})"):
        res = compute_imatrix(src, text, out, ctx=ctx, chunks=chunks, threads=threads)
    if json_out:
        print_json(res)
    else:
        console.print(f"importance matrix: {res.path} ({human_bytes(res.size_bytes)}, "
                      f"{res.chunks if res.chunks is not None else '?'} chunks of {ctx} "
                      f"tokens); use it with `edgepick quantize --imatrix {res.path}`")

def sensitivity(
    model: Optional[list[str]] = typer.Option(None, "--model", "-m", help="source GGUF (the reference) or bundled name"),
    src: Optional[str] = typer.Argument(None, hidden=True),
    low: LowOpt = "Q4_0",
    high: HighOpt = "Q8_0",
    text: TextOpt = None,
    by: ByOpt = "block",
    ctx: CtxOpt = 512,
    chunks: ChunksOpt = 4,
    threads: int = typer.Option(DEFAULTS.threads, "--threads", help="CPU threads"),
    imatrix: Optional[str] = typer.Option(None, "--imatrix", help="importance matrix"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Rank blocks or tensor classes by the KLD they cause alone at the low type."""
    src = str(_source(model, src).path)
    _warn_requantize(src)
    report = _sensitivity(src, low, high, _default_text(text, "calibration"), by, ctx, chunks,
                          threads, imatrix, store)
    if json_out:
        print_json([e.model_dump(mode="json") for e in report.entries])
        return
    t = Table("#", "unit", "KLD mean", "KLD P99", "Δ mean vs all-high", "same top-1",
              f"bytes {report.low}→{report.high}", "", title=f"sensitivity of {src}: one "
              f"{report.by} at {report.low}, the rest at {report.high}")
    for i, e in enumerate(report.entries, 1):
        t.add_row(str(i), e.unit, f"{e.kld_mean:.5f}", f"{e.kld_p99:.4f}",
                  f"{e.kld_mean - report.baseline_kld_mean:+.5f}",
                  f"{e.same_top1:.3f}" if e.same_top1 is not None else "-",
                  f"{human_bytes(e.unit_bytes_low)}→{human_bytes(e.unit_bytes_high)}",
                  "cached" if e.cached else "")
    console.print(t)
    console.print(f"all at {report.high}: KLD mean {report.baseline_kld_mean:.5f}, P99 "
                  f"{report.baseline_kld_p99:.4f}, {human_bytes(report.baseline_size_bytes)}; "
                  f"text {report.text}, {report.chunks} chunks × {report.ctx} tokens")


def register(app: typer.Typer) -> None:
    app.command()(quantize)
    app.command()(imatrix)
    app.command()(sensitivity)
