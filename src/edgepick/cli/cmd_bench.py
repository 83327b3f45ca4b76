"""`edgepick bench`: speed, memory and robustness of candidates, each in its own worker."""

from __future__ import annotations

from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from edgepick.bench.runner import run
from edgepick.bench.session import power_source
from edgepick.bench.sweeps import BenchRequest
from edgepick.cli.bench_pair import bench_pair
from edgepick.cli.bench_tables import curve_tables, results_table, write_csv
from edgepick.cli.options import STORE_HELP, int_list, open_store, split_list
from edgepick.cli.output import console, err_console, print_json
from edgepick.errors import EdgepickError
from edgepick.inputs import resolve_ref
from edgepick.llama_tools import repack_reason
from edgepick.power import PowerConfig
from edgepick.progress import ProgressEvent
from edgepick.records.candidate import DEFAULTS, RuntimeSettings
from edgepick.units import parse_size, whole_pct


def _check_counts(gen: int, repeats: int, ctx: int, warmup: int, sustain: float,
                  quiet_wait: float, contended_share: float) -> None:
    for name, v in (("--gen", gen), ("--repeats", repeats), ("--ctx", ctx)):
        if v < 1:
            raise EdgepickError(f"{name}: expected a positive integer, got {v}")
    if warmup < 0 or sustain < 0 or quiet_wait < 0:
        raise EdgepickError("--warmup, --sustain and --quiet-wait cannot be negative")
    if not 0 < contended_share <= 1:
        raise EdgepickError(f"--contended-share: expected a share in (0, 1], got "
                            f"{contended_share}")


def _print_results(results, csv_path, json_out: bool, contended_share: float) -> None:
    """The results (a table and its curves, or JSON; a CSV beside), then on stderr what makes
    them less than clean: contended measurements, repacking off, failed configurations."""
    if csv_path:
        write_csv(results, csv_path)
    if json_out:
        print_json([r.summary() for r in results])
    else:
        # the shared console lays a table out vertically when it would not fit (cli/output.py)
        console.print(results_table(results))
        for t in curve_tables(results):
            console.print(t)
    contended = sum(r.contended for r in results if not r.cached)
    if contended:
        err_console.print(f"{contended} measurement(s) contended: other work used more than "
                          f"{whole_pct(contended_share)} of the CPUs (speed gates on them are "
                          "undetermined)")
    if (why := repack_reason()) is not None:  # it changes speed and memory: said
        err_console.print(why, highlight=False)
    if any(r.status == "failed" for r in results):
        failed = sum(r.status == "failed" for r in results)
        err_console.print(f"{failed} of {len(results)} configurations failed (see 'error')")


def bench(
    model: list[str] = typer.Option(..., "--model", "-m", help="GGUF path, bundled name "
                                    "(tiny, smollm2, …) or http://host:port/v1#model; repeat"),
    backend: str = typer.Option(None, "--backend", help="llama_cpp | openai_http "
                                "(default: openai_http for URLs, else llama_cpp)"),
    model_key_env: Optional[str] = typer.Option(
        None, "--model-key-env", metavar="VAR",
        help="environment variable holding the endpoints' API key (never stored)"),
    threads: list[str] = typer.Option([str(DEFAULTS.threads)], "--threads",
                                      help="thread counts to sweep, e.g. 1,2"),
    ctx: int = typer.Option(DEFAULTS.n_ctx, "--ctx", help="context size in tokens"),
    batch: int = typer.Option(DEFAULTS.n_batch, "--batch", help="logical batch (n_batch)"),
    ubatch: int = typer.Option(DEFAULTS.n_ubatch, "--ubatch", help="physical batch (n_ubatch)"),
    kv_type: str = typer.Option(DEFAULTS.kv_type, "--kv-type",
                                help="KV cache type: f16, q8_0, q4_0…"),
    flash_attn: bool = typer.Option(DEFAULTS.flash_attn, "--flash-attn/--no-flash-attn",
                                    help="flash attention in the engine"),
    seed: int = typer.Option(DEFAULTS.seed, "--seed", help="sampling seed (decoding is greedy)"),
    prompt_lengths: list[str] = typer.Option(["128"], "--prompt-lengths",
                                             help="prompt sizes in tokens, e.g. 128,512,1024"),
    gen: int = typer.Option(128, "--gen", help="tokens generated per run"),
    warmup: int = typer.Option(1, "--warmup", help="untimed runs first"),
    repeats: int = typer.Option(5, "--repeats",
                                help="timed runs (exactly this many; in a plan, a gated "
                                     "point repeats until settled, up to bench.max_repeats)"),
    concurrency: list[str] = typer.Option(["1"], "--concurrency",
                                    help="concurrent request counts, e.g. 1,2,4"),
    sustain: float = typer.Option(0, "--sustain", help="sustained run of N seconds (0: none)"),
    mem_limit: str = typer.Option(None, "--mem-limit", help="kill a worker above this "
                                  "RSS+swap, e.g. 2GiB (emulates a device budget)"),
    timeout: float = typer.Option(900, "--timeout", help="seconds per configuration "
                                  "(a sustained run gets its duration on top)"),
    power_command: str = typer.Option(None, "--power-command",
                                      help="external meter command printing watts or joules "
                                           "(e.g. a USB power meter's reader)"),
    adb_serial: str = typer.Option(None, "--adb-serial",
                                   help="read an Android phone's fuel gauge over adb"),
    quiet_wait: float = typer.Option(5.0, "--quiet-wait",
                                     help="seconds to wait at most for a quiet host "
                                          "before each configuration"),
    contended_share: float = typer.Option(0.25, "--contended-share",
                                          help="other work above this share of the CPUs "
                                               "marks a measurement contended"),
    store: str = typer.Option(None, "--store", help=STORE_HELP),
    fresh: bool = typer.Option(False, "--fresh", help="measure again what is stored"),
    json_out: bool = typer.Option(False, "--json", help="print the results as JSON"),
    csv_path: str = typer.Option(None, "--csv", help="also write the results flat to CSV"),
    resident: bool = typer.Option(
        False, "--resident", help="two models (-m A -m B) resident in one process: the "
        "pair's memory, each one's TTFT, and the TTFT of a request for A that waits for A "
        "to swap in (--repeats swaps, at least 3)"),
) -> None:
    """Measure TTFT, decode speed and memory; sweep prompt length, threads, concurrency;
    sustained speed decay.

    Also prefill speed and inter-token latency (ITL); joules per token where a power counter
    exists. Definitions: docs/metrics.md."""
    _check_counts(gen, repeats, ctx, warmup, sustain, quiet_wait, contended_share)
    try:
        limit = parse_size(mem_limit) if mem_limit else None
    except ValueError as exc:
        raise EdgepickError(f"--mem-limit: {exc}") from None
    refs = [resolve_ref(m, backend=backend, api_key_env=model_key_env if "://" in m else None)
            for m in split_list(model)]
    settings = RuntimeSettings(n_ctx=ctx, n_batch=batch, n_ubatch=ubatch, kv_type=kv_type,
                               flash_attn=flash_attn, seed=seed)
    if resident:
        return bench_pair(refs, settings.model_copy(update={
            "threads": int_list(threads, "--threads")[0]}),
            int_list(prompt_lengths, "--prompt-lengths")[0], gen, repeats, timeout,
            store, json_out)
    req = BenchRequest(
        models=refs, settings=settings, threads=int_list(threads, "--threads"),
        prompt_lengths=int_list(prompt_lengths, "--prompt-lengths"), gen_tokens=gen,
        warmup=warmup, repeats=repeats, concurrency=int_list(concurrency, "--concurrency"),
        sustain_s=sustain, mem_limit=limit, timeout_s=timeout or None,
        power=PowerConfig(command=power_command, adb_serial=adb_serial),
        quiet_wait_s=quiet_wait, contended_share=contended_share)
    err_console.print(f"power: {power_source(req.power)[1]}", highlight=False,
                      soft_wrap=True)
    results = _run_with_progress(req, open_store(store), fresh, quiet_stdout=json_out,
                                 run=run)
    _print_results(results, csv_path, json_out, contended_share)


def register(app: typer.Typer) -> None:
    app.command()(bench)


def _run_with_progress(req, store, fresh: bool, *, quiet_stdout: bool, run):
    # With --json, stdout carries only the JSON; progress goes to stderr.
    target = err_console if quiet_stdout else console
    with store, Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                         MofNCompleteColumn(), TimeElapsedColumn(), console=target,
                         transient=False) as progress:
        task = progress.add_task("bench", total=None)

        def tick(ev: ProgressEvent) -> None:
            progress.update(task, total=ev.total, description=ev.what)

        def on_result(res):
            mark = "stored" if res.cached else res.status
            progress.console.print(f"  {res.model} {res.config}: {mark}"
                                   + (f" ({res.error})" if res.error else ""),
                                   highlight=False, soft_wrap=True)
            progress.advance(task)

        return run(req, store, tick, fresh=fresh, on_result=on_result)
