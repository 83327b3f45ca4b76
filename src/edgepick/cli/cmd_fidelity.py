"""`edgepick fidelity` (distribution-level fidelity to a reference, as llama-perplexity measures
it) and `edgepick consistency` (do the greedy answers stay identical; CI-friendly exit code)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from edgepick.cli.options import STORE_HELP, merged, one_model, open_store
from edgepick.cli.output import console, err_console, print_json
from edgepick.cli.progress_lines import progress_lines
from edgepick.evaluate import consistency_stage, fidelity_stage
from edgepick.evaluate.consistency_stage import ConsistencyRequest
from edgepick.evaluate.eval_sets import bundled_set_path
from edgepick.evaluate.fidelity import bundled_text
from edgepick.evaluate.fidelity_stage import FidelityRequest
from edgepick.inputs import resolve_ref
from edgepick.progress import ProgressEvent, silent
from edgepick.records.candidate import DEFAULTS
from edgepick.units import pct

# both commands compare one candidate with a reference
CandidateOpt = Annotated[Optional[list[str]],
                         typer.Option("--model", "-m", help="candidate GGUF or bundled name")]
ReferenceOpt = Annotated[str, typer.Option("--reference", "-r",
                                           help="reference GGUF or bundled name")]
OldCandidateOpt = Annotated[Optional[str], typer.Option("--candidate", "-c", hidden=True)]


@contextmanager
def _progress(enabled: bool) -> Iterator:
    """A rich bar on stderr (stdout stays clean for --json); yields the callback or None."""
    if not enabled:
        yield None
        return
    if not err_console.is_terminal:  # no bar can be drawn: a line per step and every 10 s
        with progress_lines(lambda text: err_console.print(text, highlight=False)) as update:
            yield update
        return
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=err_console, transient=True)
    with bar:
        task = bar.add_task("loading", total=None)

        def update(ev: ProgressEvent) -> None:
            bar.update(task, description=ev.what, completed=ev.done, total=ev.total)

        yield update


def fidelity(
    model: CandidateOpt = None,
    reference: ReferenceOpt = ...,
    candidate: OldCandidateOpt = None,
    text: Optional[str] = typer.Option(
        None, "--text", help="UTF-8 text file (default: the bundled fidelity text)"),
    ctx: int = typer.Option(512, "--ctx", help="tokens per chunk; the second half is scored"),
    chunks: Optional[int] = typer.Option(None, "--chunks", help="score at most N chunks"),
    threads: int = typer.Option(DEFAULTS.threads, "--threads", help="inference threads"),
    no_cache: bool = typer.Option(False, "--no-cache",
                                  help="do not keep the reference's log-probs on disk"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Perplexities, KL divergence, top-1 agreement and Δp of the model against REFERENCE."""
    cand = one_model(merged(model, [candidate] if candidate else None, "-c/--candidate",
                            "-m/--model"), None, "candidate")
    path = str(Path(text) if text else bundled_text("fidelity"))
    req = FidelityRequest(reference=resolve_ref(reference), candidate=resolve_ref(cand),
                          text=path, ctx=ctx, max_chunks=chunks, threads=threads,
                          cache=not no_cache)
    with _progress(not json_out) as cb, open_store(store, path) as rs:
        res = fidelity_stage.run(req, rs, cb or silent)
    if json_out:
        print_json(res)
        return
    t = Table("metric", "value", "± (1 s.e.)",
              title=f"{Path(res.candidate).name} vs {Path(res.reference).name}: "
                    f"{res.n_chunks} chunks × {res.ctx} tokens, {res.n_scored} positions scored")
    rows = [
        ("PPL reference", res.ppl_ref, res.ppl_ref_unc),
        ("PPL candidate", res.ppl_cand, res.ppl_cand_unc),
        ("PPL ratio", res.ppl_ratio, res.ppl_ratio_unc),
        ("KLD mean", res.kld_mean, res.kld_mean_unc),
        ("KLD median", res.kld_median, None), ("KLD P90", res.kld_p90, None),
        ("KLD P95", res.kld_p95, None), ("KLD P99", res.kld_p99, None),
        ("KLD P99.9", res.kld_p999, None), ("KLD max", res.kld_max, None),
    ]
    for name, v, u in rows:
        t.add_row(name, f"{v:.6f}", "" if u is None else f"{u:.6f}")
    t.add_row("same top-1", f"{100 * res.same_top1:.3f}%", f"{100 * res.same_top1_unc:.3f}%")
    t.add_row("RMS Δp", f"{100 * res.rms_dp:.3f}%", f"{100 * res.rms_dp_unc:.3f}%")
    console.print(t)
    if res.reference_cached:
        console.print("reference log-probs reused from the cache")


def consistency(
    model: CandidateOpt = None,
    reference: ReferenceOpt = ...,
    candidate: OldCandidateOpt = None,
    data: str = typer.Option(..., "--data", "-d",
                             help="eval JSONL or a bundled set (demo, demo-tools): each "
                                  "item's messages/prompt"),
    max_tokens: int = typer.Option(64, "--max-tokens", help="greedy tokens per answer"),
    threshold: float = typer.Option(0.9, "--threshold",
                                    help="exit 1 when the identical share is below this"),
    threads: int = typer.Option(DEFAULTS.threads, "--threads", help="inference threads"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
    show: int = typer.Option(10, "--show", help="diverging items to list"),
) -> int:
    """Greedy answers of the model and REFERENCE: identical share, first diverging token."""
    cand = one_model(merged(model, [candidate] if candidate else None, "-c/--candidate",
                            "-m/--model"), None, "candidate")
    path = bundled_set_path(data) or data
    req = ConsistencyRequest(reference=resolve_ref(reference),
                             candidate=resolve_ref(cand), data=path,
                             max_tokens=max_tokens, threshold=threshold, threads=threads)
    with _progress(not json_out) as cb, open_store(store, path) as rs:
        res = consistency_stage.run(req, rs, cb or silent)
    for msg in res.skipped:
        err_console.print(f"[yellow]skipped:[/] {msg}", highlight=False, soft_wrap=True)
    if json_out:
        print_json(res)
    else:
        diverging = [it for it in res.items if not it.identical]
        if diverging and show:
            t = Table("item", "first diff (token)", "reference", "candidate",
                      title=f"diverging answers (first {min(show, len(diverging))} "
                            f"of {len(diverging)})")
            for it in diverging[:show]:
                t.add_row(it.id, str(it.first_divergence), it.ref_text[:60], it.cand_text[:60])
            console.print(t)
        mean = "-" if res.mean_first_divergence is None else f"{res.mean_first_divergence:.1f}"
        if res.engines and res.engines[0] != res.engines[1]:
            first = next((it for it in res.items if it.token_divergence is not None), None)
            console.print(
                f"across engines ({res.engines[0]} vs {res.engines[1]}): token IDs same for "
                f"{res.n_same_tokens}/{res.n} texts"
                + (f", first differs in {first.id} at token {first.token_divergence}"
                   if first else "")
                + f"; chat template text same for "
                  f"{sum(it.same_prompt_text for it in res.items)}/{res.n}")
        verdict = "[green]pass[/]" if res.passed else "[bold red]FAIL[/]"
        console.print(f"identical: {res.n_identical}/{res.n} = {pct(res.identical_share)} "
                      f"(threshold {pct(res.threshold)}) {verdict}; mean first "
                      f"diverging token {mean}")
    if not res.passed:
        raise typer.Exit(code=1)
    return 0


def register(app: typer.Typer) -> None:
    app.command()(fidelity)
    app.command()(consistency)
