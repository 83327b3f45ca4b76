"""`edgepick eval`: task quality of candidates against a reference on an eval set (JSONL)."""

from __future__ import annotations

import csv
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, List, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from edgepick.cli.options import STORE_HELP, open_store, split_list
from edgepick.cli.output import console, err_console, print_json
from edgepick.cli.progress_lines import progress_lines
from edgepick.evaluate.eval_sets import bundled_set_path
from edgepick.evaluate.intervals import verdict, wilson
from edgepick.evaluate.stage import EvalRequest, distinct_names, run
from edgepick.inputs import resolve_ref
from edgepick.progress import ProgressEvent
from edgepick.records.candidate import DEFAULTS, Candidate, RuntimeSettings
from edgepick.units import pct

ELIMINATE_ABOVE = 0.05  # seed 004 §2.3: more than 5% unacceptable outputs eliminates a candidate


def demo_eval_path() -> str:
    return str(Path(__file__).resolve().parent.parent / "data" / "demo_eval.jsonl")


def _gap_table(title: str, groups: dict, first: str) -> Table:
    t = Table(first, "n", "ref", "cand", "gap", "gap rel", "95% CI (gap)", "+bad/1000",
              "format ok", "unacceptable", title=title)
    for name, g in groups.items():
        t.add_row(name, str(g.n), f"{g.ref_score:.3f}", f"{g.score:.3f}", f"{g.gap_abs:+.3f}",
                  pct(g.gap_rel), f"[{g.ci95[0]:+.3f}, {g.ci95[1]:+.3f}]",
                  f"{g.badcases_per_1000:+.0f}", pct(g.format_ok_rate), pct(g.unacceptable_rate))
    return t


def _print_human(res, show_badcases: int) -> None:
    ref = res.reference
    console.print(f"[bold]{res.n_items}[/] items from {res.data}; reference [bold]{ref.name}[/] "
                  f"(unacceptable {pct(ref.unacceptable_rate)}); gap = reference − candidate, "
                  f"{res.bootstrap.resamples} paired bootstrap resamples")
    if res.reference_free_note:
        console.print(f"[yellow]{res.reference_free_note}[/]")
    for c in res.candidates:
        console.print()
        console.print(_gap_table(f"{c.name} vs {ref.name}: per task", c.per_task, "task"))
        console.print(_gap_table(f"{c.name}: per difficulty", c.per_difficulty, "difficulty"))
        extras = Table("task", "metric", "reference", "candidate", title=f"{c.name}: task metrics")
        for task, g in c.per_task.items():
            for k, v in g.metrics.items():
                extras.add_row(task, k, f"{g.ref_metrics.get(k, 0):.3f}", f"{v:.3f}")
        console.print(extras)
        u = c.unacceptable

        lo, hi = wilson(u.count, u.n)
        verdict_ = verdict(u.rate, lo, hi, ELIMINATE_ABOVE, "max")
        flag = {"fail": " [bold red]above 5% with its whole interval: eliminated (seed 004 §2.3)[/]",
                "undetermined": " [yellow]5% inside the interval: undetermined, more items "
                                "needed[/]"}.get(verdict_, "")
        console.print(f"unacceptable outputs: {u.count}/{u.n} = {pct(u.rate)} "
                      f"[{pct(lo)}, {pct(hi)}]{flag}  "
                      + ", ".join(f"{k} {v}" for k, v in u.reasons.items()), highlight=False)
        console.print(f"outputs: {c.generated} generated, {c.reused} reused from the store; "
                      f"{len(c.badcases)} badcases")
        if c.badcases and show_badcases:
            bt = Table("item", "task", "expected", "got", "reference said", "why",
                       title=f"{c.name}: badcases (first {min(show_badcases, len(c.badcases))} "
                             f"of {len(c.badcases)})")
            for b in c.badcases[:show_badcases]:
                exp = b.expected if isinstance(b.expected, str) else json.dumps(b.expected, ensure_ascii=False)
                bt.add_row(b.item_id + (" [red]critical[/]" if b.critical else ""), b.task,
                           exp[:60], b.got[:60], (b.reference_output or "")[:60], b.why[:80])
            console.print(bt)


def _write_out(res, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.json").write_text(json.dumps(res.model_dump(mode="json"), indent=2,
                                              ensure_ascii=False))
    with open(out / "badcases.jsonl", "w", encoding="utf-8") as fh:
        for c in res.candidates:
            for b in c.badcases:
                fh.write(json.dumps(dict(b.model_dump(mode="json"), candidate=c.name),
                                    ensure_ascii=False) + "\n")
    with open(out / "gap.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["candidate", "group_kind", "group", "n", "ref_score", "score", "gap_abs",
                    "gap_rel", "ci95_lo", "ci95_hi", "badcases_per_1000", "format_ok_rate",
                    "unacceptable_rate"])
        for c in res.candidates:
            for kind, groups in (("task", c.per_task), ("difficulty", c.per_difficulty),
                                 ("overall", {"all": c.overall})):
                for name, g in groups.items():
                    w.writerow([c.name, kind, name, g.n, g.ref_score, g.score, g.gap_abs, g.gap_rel,
                                g.ci95[0], g.ci95[1], g.badcases_per_1000, g.format_ok_rate,
                                g.unacceptable_rate])


@contextmanager
def _eval_progress(json_out: bool) -> Iterator[Callable[[ProgressEvent], None]]:
    """A bar on a terminal; elsewhere (a log file, CI) a line per step and every 10 s, since a
    bar there shows only once eval is done."""
    if not err_console.is_terminal:
        with progress_lines(lambda text: err_console.print(text, highlight=False)) as tick:
            yield tick
        return
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err_console, transient=json_out)
    bar = progress.add_task("eval", total=None)

    def tick(ev: ProgressEvent) -> None:
        progress.update(bar, completed=ev.done, total=ev.total, description=ev.what)

    with progress:
        yield tick


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_cmd(
        model: List[str] = typer.Option(..., "--model", "-m",
                                        help="candidate: GGUF path, bundled name, or http://host:port/v1#name"),
        reference: str = typer.Option(..., "--reference", "-r", help="reference model, same forms"),
        reference_key_env: Optional[str] = typer.Option(
            None, "--reference-key-env", metavar="VAR",
            help="environment variable holding the reference endpoint's API key (sent as a "
                 "Bearer token; never stored)"),
        model_key_env: Optional[str] = typer.Option(
            None, "--model-key-env", metavar="VAR",
            help="environment variable holding the API key of the endpoint candidates"),
        data: Optional[List[str]] = typer.Option(
            None, "--data", "-d", help="eval set JSONL, or a bundled set: demo (default), "
                                       "demo-tools; repeat to evaluate several sets as one"),
        limit: Optional[int] = typer.Option(None, "--limit", min=1,
                                            help="N valid items per set, taken round-robin over tasks"),
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
        out: Optional[Path] = typer.Option(None, "--out", help="write eval.json, badcases.jsonl, gap.csv here"),
        threads: int = typer.Option(DEFAULTS.threads, "--threads", help="inference threads"),
        ctx: int = typer.Option(DEFAULTS.n_ctx, "--ctx", help="context size in tokens"),
        parallel: int = typer.Option(
            8, "--parallel", min=1, max=64,
            help="decoding slots of an in-process engine, in its one KV cache of --ctx; each "
                 "item takes the next free one (1: one at a time; the stored outputs are the "
                 "same records)"),
        show_badcases: int = typer.Option(15, "--show-badcases", help="badcases printed per candidate"),
        json_out: bool = typer.Option(False, "--json", help="print JSON (per-item outcomes in --out only)"),
    ) -> None:
        """Score candidates and a reference on an eval set: gap per task with bootstrap CI, badcases."""
        paths = [bundled_set_path(d) or d for d in (data or ["demo"])]
        settings = RuntimeSettings(threads=threads, n_ctx=ctx)
        ref = Candidate(ref=resolve_ref(reference, api_key_env=reference_key_env),
                        settings=settings)
        cands = [Candidate(ref=resolve_ref(m, api_key_env=model_key_env if "://" in m else None),
                           settings=settings) for m in split_list(model)]
        distinct_names([ref, *cands])
        with open_store(store, paths[0]) as rs, _eval_progress(json_out) as tick:
            res = run(EvalRequest(data=paths if len(paths) > 1 else paths[0], reference=ref,
                                  candidates=cands, limit=limit, parallel=parallel), rs, tick)
        for p in res.problems:
            err_console.print(f"[yellow]skipped:[/] {p}", highlight=False, soft_wrap=True)
        if res.problems:
            err_console.print(f"{len(res.problems)} problem(s); evaluated the {res.n_items} "
                              "valid items")
        if out:
            _write_out(res, out)
        if json_out:
            data_out = res.model_dump(mode="json")
            for c in [data_out["reference"], *data_out["candidates"]]:
                c.pop("items", None)
            print_json(data_out)
        else:
            _print_human(res, show_badcases)
            if out:
                console.print(f"written: {out}/eval.json, badcases.jsonl, gap.csv")
