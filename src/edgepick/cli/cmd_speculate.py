"""`edgepick speculate`: does speculative decoding pay, per task, on this device and these
prompts? Measures, stores for decide, prints the per-task table."""

from __future__ import annotations

from typing import List, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from edgepick.bench.speculation_stage import SpeculationRequest, run
from edgepick.cli.options import STORE_HELP, open_store, split_list
from edgepick.cli.output import console, err_console, print_json
from edgepick.errors import EdgepickError
from edgepick.evaluate.eval_sets import bundled_set_path
from edgepick.evaluate.items import load_eval_set
from edgepick.inputs import resolve_ref
from edgepick.records.candidate import DEFAULTS, RuntimeSettings
from edgepick.records.speculative import NEEDS_MODEL, Speculation

KIND_HELP = ("a kind of speculative decoding: TYPE[:DRAFT][:N_MAX], e.g. ngram-mod, "
             "ngram-mod:16, draft-simple:draft.gguf:8 (DRAFT: a GGUF path or bundled name); "
             "repeat")


def parse_kind(text: str, resolve) -> Speculation:
    """`TYPE[:DRAFT][:N_MAX]` as a Speculation; `resolve(name)` gives a draft's file."""
    parts = text.split(":")
    spec = Speculation.model_validate({"type": parts[0], "model": "x"}) \
        if parts[0] in NEEDS_MODEL or parts[0] == "draft" else None
    kind = spec.type if spec else parts[0]
    data: dict = {"type": kind}
    rest = parts[1:]
    if kind in NEEDS_MODEL:
        if not rest:
            raise EdgepickError(f"--kind {text}: {kind} needs a draft model, "
                                f"{kind}:DRAFT[:N_MAX]")
        data["model"] = resolve(rest.pop(0))
    if rest:
        if len(rest) > 1 or not rest[0].isdigit():
            raise EdgepickError(f"--kind {text}: expected TYPE[:DRAFT][:N_MAX], N_MAX a number")
        data["n_max"] = int(rest[0])
    return Speculation.model_validate(data)


def pick_items(items: list, tasks: list[str], per_task: int, offset: int) -> list:
    """Items `offset`..`offset + per_task` of each task, in the set's order."""
    out = []
    for task in tasks or list(dict.fromkeys(it.task for it in items)):
        of_task = [it for it in items if it.task == task]
        if not of_task:
            raise EdgepickError(f"task {task}: the eval set has no item of it (it has: "
                                + ", ".join(sorted({it.task for it in items})) + ")")
        out += of_task[offset:offset + per_task]
    return out


def _iv(x, lo, hi, fmt="{:.2f}") -> str:
    if x is None:
        return "-"
    return fmt.format(x) if lo is None else f"{fmt.format(x)} [{fmt.format(lo)},{fmt.format(hi)}]"


def _drafted_on(f) -> str:
    k = f.drafting_items
    return "" if k is None or k in (0, f.items) else f" ({k}/{f.items} drafted)"


def figures_table(rec) -> Table:
    """Per task and kind; reads as a table at 100 columns (the kind's parts wrap in its cell),
    one block per row when narrower (cli/output.fit_table)."""
    t = Table(title=f"speculative decoding on {rec.label}, per task, against plain decoding")
    for col in ("task", "kind", "speed-up [95%]", "accepted [95%]", "len", "draft", "same",
                "verdict"):
        t.add_column(col, justify="right" if col in ("len", "draft", "same") else "left")
    for f in rec.figures:
        t.add_row(f.task, f.setting.replace(":", " "),
                  _iv(f.speedup, f.speedup_low, f.speedup_high),
                  _iv(f.acceptance, f.acceptance_low, f.acceptance_high),
                  "-" if f.mean_accepted_len is None else f"{f.mean_accepted_len:.1f}",
                  "-" if f.draft_share is None else f"{f.draft_share:.0%}",
                  f"{f.identical}/{f.items}", f.verdict + _drafted_on(f))
    return t


def register(app: typer.Typer) -> None:
    @app.command()
    def speculate(
        model: str = typer.Option(..., "--model", "-m",
                                  help="the target: a GGUF path or bundled name (smollm2-f16, …)"),
        kind: List[str] = typer.Option(["ngram-mod"], "--kind", "-k", help=KIND_HELP),
        data: str = typer.Option("demo", "--data", "-d",
                                 help="eval set JSONL, or a bundled set (demo)"),
        tasks: Optional[List[str]] = typer.Option(
            None, "--tasks", help="task types to measure, e.g. extraction,qa [default: all]"),
        per_task: int = typer.Option(5, "--per-task", min=1, max=200, help="items per task"),
        offset: int = typer.Option(0, "--offset", min=0,
                                   help="skip this many items of each task (another slice)"),
        max_tokens: Optional[int] = typer.Option(
            None, "--max-tokens", min=1, help="cap every task's output budget [default: eval's "
                                              "per-task budgets]"),
        threads: int = typer.Option(DEFAULTS.threads, "--threads", help="inference threads"),
        ctx: int = typer.Option(1024, "--ctx", help="context size in tokens"),
        repeats: int = typer.Option(1, "--repeats", min=1, max=5,
                                    help="requests per item and setting (more flatters the "
                                         "n-gram kinds: their pool holds the earlier answer)"),
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
        fresh: bool = typer.Option(False, "--fresh", help="measure again what is stored"),
        json_out: bool = typer.Option(False, "--json", help="print the record as JSON"),
    ) -> None:
        """Measure per task whether speculative decoding pays: each --kind against plain decoding
        on the eval set's own items.

        Each item is decoded greedily at its task's output budget on llama-server, plainly and
        with each kind, side by side. Prints per task and kind the speed-up with its 95% interval, the acceptance rate with its
        interval, the mean accepted length, the draft's share of decode time and how many greedy
        answers stayed the same; stores them, so `edgepick decide` (and `run`) turns
        speculation on for the tasks where it wins and off elsewhere (docs/bench.md)."""
        def draft_file(name: str) -> str:
            ref = resolve_ref(name)
            if ref.path is None:
                raise EdgepickError(f"draft {name}: a local GGUF file or bundled name")
            return str(ref.path)

        kinds = [parse_kind(k, draft_file) for k in split_list(kind)]
        path = bundled_set_path(data) or data
        items, problems = load_eval_set(path)
        for p in problems:
            err_console.print(f"[yellow]skipped:[/] {p}", highlight=False, soft_wrap=True)
        chosen = pick_items(items, split_list(tasks), per_task, offset)
        target = resolve_ref(model, backend="llama_server")
        req = SpeculationRequest(model=target, kinds=kinds, items=chosen, eval_set=path,
                                 base=RuntimeSettings(threads=threads, n_ctx=ctx),
                                 repeats=repeats, fresh=fresh, max_tokens=max_tokens)
        with open_store(store, path) as rs, Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), console=err_console, disable=json_out) as bar:
            job = bar.add_task("speculate", total=None)
            rec = run(req, rs, lambda ev: bar.update(job, completed=ev.done, total=ev.total,
                                                      description=ev.what[:40]))
        for tag, why in rec.refused.items():
            err_console.print(f"[yellow]not measured:[/] {tag}: {why}", highlight=False,
                              soft_wrap=True)
        if json_out:
            print_json(rec.model_dump(mode="json", exclude={"requests"}))
            return
        console.print(figures_table(rec))
        gap = rec.timing_gap
        console.print(f"client vs llama-server timings: largest gap "
                      f"{'-' if gap is None else f'{gap:.1%}'}"
                      + ("; reused from the store (--fresh measures again)" if rec.reused else ""))
