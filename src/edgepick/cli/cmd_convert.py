"""`edgepick convert`: a model to another engine's format (ONNX Runtime GenAI INT4), recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from pydantic import ValidationError
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from edgepick.cli.options import STORE_HELP, one_model
from edgepick.cli.output import console, err_console, human_bytes, print_json
from edgepick.convert.recipe import ConvertRecipe
from edgepick.convert.run import convert_gguf, convert_hf, store_record
from edgepick.errors import EdgepickError, first_problem
from edgepick.inputs import resolve_ref
from edgepick.progress import ProgressEvent

ENGINES = ("onnxruntime-genai",)


def _record_table(rec) -> Table:
    t = Table(show_header=False, title=f"convert → {rec.out_dir}" + (" (reused)" if rec.skipped
                                                                      else ""))
    r = rec.recipe
    t.add_row("recipe", f"{r.engine} {r.precision}" + (
        f", block {r.block_size}, {r.algo}, symmetric, accuracy level {r.accuracy_level}, "
        f"lm_head INT{r.lm_head_bits}" if r.precision == "int4" else "")
        + f", context {r.context_length}, route {r.route}")
    t.add_row("source", f"{rec.source} ({', '.join(f'{n}× {k}' for k, n in rec.source_types.items())})")
    t.add_row("size", human_bytes(rec.size_bytes))
    t.add_row("time", f"{rec.seconds:.1f} s (" + ", ".join(
        f"{k} {v:.1f} s" for k, v in rec.step_seconds.items()) + ")")
    t.add_row("steps", "\n".join(f"{i + 1}. {s}" for i, s in enumerate(rec.steps)))
    t.add_row("check", rec.tokenizer_check)
    for w in rec.warnings:
        t.add_row("warning", w)
    return t


def register(app: typer.Typer) -> None:
    @app.command()
    def convert(
        model: Optional[list[str]] = typer.Option(None, "--model", "-m", help="source: a GGUF "
                                                  "(any type gguf can dequantize), a bundled "
                                                  "name, or a Hugging Face folder (needs torch)"),
        engine: str = typer.Option("onnxruntime-genai", "--engine", help="target engine"),
        precision: str = typer.Option("int4", "--precision", help="int4 | fp32 (fp32: "
                                      "unquantized, to check the graph itself)"),
        block_size: int = typer.Option(32, "--block-size", help="INT4 group size: 32 | 64 | "
                                       "128 | 256 (seed 001 §4)"),
        algo: str = typer.Option("k_quant", "--algo", help="INT4 algorithm: k_quant | default "
                                 "(round to nearest)"),
        lm_head_bits: int = typer.Option(4, "--lm-head-bits", help="bits of the output "
                                         "projection: 4 | 8 (8 needs k_quant)"),
        accuracy_level: int = typer.Option(4, "--accuracy-level", help="MatMulNBits compute "
                                           "precision: 4 = int8 (CPU default), 0 = unset"),
        context_length: int = typer.Option(4096, "--context-length", help="longest context "
                                           "the build will serve"),
        out: str = typer.Option(..., "--out", help="output folder"),
        force: bool = typer.Option(False, "--force", help="replace what is in --out"),
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP + "; the record "
                                            "is kept there too when given"),
        json_out: bool = typer.Option(False, "--json", help="print the record as JSON"),
    ) -> None:
        """Convert a model for ONNX Runtime GenAI (INT4, group-wise), torch-free from a GGUF.

        The recipe and what happened (steps, times, checks, warnings) are written to
        OUT/edgepick_convert.json; the same command rebuilds the same bytes."""
        if engine not in ENGINES:
            raise EdgepickError(f"--engine: '{engine}' is not supported; known: "
                                f"{', '.join(ENGINES)}")
        ref = resolve_ref(one_model(model, None, "source model"))
        if ref.is_endpoint:
            raise EdgepickError(f"{ref.spec}: converting needs a model on disk, not an endpoint")
        hf = Path(ref.path).is_dir() and (Path(ref.path) / "config.json").is_file()
        try:
            recipe = ConvertRecipe(precision=precision, block_size=block_size, algo=algo,
                                   lm_head_bits=lm_head_bits, accuracy_level=accuracy_level,
                                   context_length=context_length,
                                   route="hf-builder" if hf else "gguf")
        except ValidationError as exc:
            field, problem = first_problem(exc)
            flag = (field or "").split(".")[0].replace("_", "-")
            raise EdgepickError(f"--{flag}: {problem}") from None
        if not hf and Path(ref.path).is_dir():
            raise EdgepickError(f"{ref.path}: a folder without config.json; give a GGUF or a "
                                "Hugging Face folder")
        bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), console=err_console, transient=True)
        tasks: dict[str, int] = {}

        def progress(ev: ProgressEvent) -> None:
            if ev.what not in tasks:
                tasks[ev.what] = bar.add_task(ev.what, total=ev.total)
            bar.update(tasks[ev.what], completed=ev.done, total=ev.total)

        def warn(msg: str) -> None:
            err_console.print(f"[bold yellow]warning:[/] {msg}", highlight=False, soft_wrap=True)

        with bar:
            if hf:
                record = convert_hf(str(ref.path), recipe, out, force=force, progress=progress)
            else:
                record = convert_gguf(str(ref.path), recipe, out, force=force,
                                      progress=progress, warn=warn)
        store_record(store, record)
        if json_out:
            print_json(record)
        else:
            console.print(_record_table(record))
