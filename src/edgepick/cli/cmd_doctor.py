"""`edgepick doctor TARGET [--symptom S] [--reference REF] [--prompts FILE] [--json]`: from a
symptom to its cause, measured, with the fix (docs/doctor.md)."""

from __future__ import annotations

import os
from typing import Optional

import typer
from rich.table import Table

from edgepick.cli.cmd_fidelity import _progress
from edgepick.cli.options import STORE_HELP, open_store, split_list
from edgepick.cli.output import console, err_console, print_json
from edgepick.cli.remote_text import say_remote
from edgepick.doctor.plan import plan
from edgepick.doctor.remote import not_run_line, planned, run_remote
from edgepick.doctor.render import checks_table, evidence_lines, findings_table
from edgepick.doctor.runner import QUICK_BUDGET_S, SYMPTOM_BUDGET_S, DoctorRequest, run
from edgepick.errors import EdgepickError
from edgepick.inputs import resolve_ref
from edgepick.inputs.remote import is_remote, resolve_remote
from edgepick.llama_tools import repack_reason
from edgepick.progress import silent
from edgepick.records.candidate import DEFAULTS
from edgepick.report.doctor_section import append_to_report, report_dir_of
from edgepick.strings import texts
from edgepick.units import parse_size


def _say_plan(req, t: dict, target: str, symptom, check, remote, time_budget) -> None:
    """The run's first lines on stderr: what is examined, for which symptom, and the checks
    planned within the time budget."""
    names = [c.name for c in plan(symptom) if not check or c.name in check]
    if not check and "://" not in target:
        names = [n for n in ("file_integrity", "engine_support")
                 if n not in names] + names
    if remote is not None:
        names = planned(req)
    err_console.print(t["title"].format(target=target) + "; "
                      + (t["symptom"].format(s=symptom) if symptom else t["quick"]),
                      highlight=False)
    err_console.print(t["plan"].format(
        budget=time_budget or (SYMPTOM_BUDGET_S if symptom else QUICK_BUDGET_S),
        checks=", ".join(names)), highlight=False)


def _print_report(report, t: dict, target: str, remote, lang: str) -> None:
    """The findings with their evidence, the checks table, why the run stopped and what it
    left out."""
    if report.findings:
        header, rows = findings_table(report, lang)
        table = Table(*header, title=t["title"].format(target=target), show_lines=True)
        for r in rows:
            table.add_row(*r)
        console.print(table)
        for i, f in enumerate(report.findings, 1):
            console.print(f"[bold]#{i} {t.get(f.cause, f.cause)}[/] — {t['evidence']}:")
            for line in evidence_lines(f, lang):
                console.print(f"  - {line}", highlight=False)
    else:
        console.print(t["none"])
    header, rows = checks_table(report, lang)
    ct = Table(*header)
    for r in rows:
        ct.add_row(*r)
    console.print(ct)
    if report.stopped:
        console.print(t["stopped"].format(why=report.stopped), highlight=False)
    if remote is not None and (line := not_run_line(report, remote)):
        console.print(line, highlight=False)
    if (why := repack_reason()) is not None:  # doctor's speeds and memory ran without it
        console.print(why, highlight=False)
    console.print(t["elapsed"].format(s=report.elapsed_s, budget=report.budget_s))


def doctor(
    target: str = typer.Argument(..., help="a GGUF (or bundled name), a deploy.yaml, "
                                           "the URL of a running `edgepick serve`, or a "
                                           "GGUF where it lives (https://…/x.gguf, "
                                           "hf:ORG/REPO/FILE.gguf): its header-only checks"),
    symptom: Optional[str] = typer.Option(
        None, "--symptom", help="what is wrong: garbled, repetition, slow, "
                                "slow-first-token, oom, load-failure, memory-growth, "
                                "tool-calls, context-overflow, mismatch (none: the quick "
                                "health checks)"),
    reference: Optional[str] = typer.Option(
        None, "--reference", "-r", help="a known-good GGUF of the same vocabulary (the F16 "
                                        "or the build it came from), or a bundled name"),
    prompts: Optional[str] = typer.Option(
        None, "--prompts", help="prompts to measure with: an eval JSONL (messages, tools, "
                                "an optional recorded reply) or one prompt a line"),
    budget: Optional[str] = typer.Option(
        None, "--budget", help="memory the model may use, e.g. 2GiB (default: the deploy "
                               "device's budget or gate, else the free memory)"),
    time_budget: Optional[float] = typer.Option(
        None, "--time-budget", help="seconds to spend (default: 180 for the quick checks, "
                                    "600 with --symptom)"),
    check: Optional[list[str]] = typer.Option(
        None, "--check", help="run only this check of the plan (repeatable)"),
    threads: int = typer.Option(DEFAULTS.threads, "--threads", help="inference threads"),
    sustain_worker: Optional[str] = typer.Option(
        None, "--sustain-worker", help="MODULE:FUNCTION replacing bench's sustained-run "
                                       "worker, e.g. an engine shim under test"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
    lang: str = typer.Option("en", "--lang", help="language of the table: en | zh"),
) -> int:
    """Find the cause of a symptom by changing one axis at a time against a known-good
    baseline, and print each cause with its evidence and the fix; exit 1 when a cause is
    found.

    Causes: quantization, kv_cache_type, sampling, chat_template, context_overflow,
    host_load, thermal_throttling, memory_budget, memory_growth, engine_support,
    file_integrity, cold_start, conversion, tool_schema, speculation. Figures already in
    the results store for this file and these settings are reused."""
    check = split_list(check) or None
    if lang not in ("en", "zh"):
        raise EdgepickError(f"--lang must be en or zh, got '{lang}'")
    ref = None
    if reference:
        ref = resolve_ref(reference)
    remote = resolve_remote(target) if is_remote(target) else None
    target_path = target
    if remote is None and "://" not in target and not target.endswith((".yaml", ".yml")):
        if not os.path.exists(target):
            target_path = resolve_ref(target).path or target  # a bundled name
    try:
        budget_bytes = parse_size(budget) if budget else None
    except ValueError as exc:
        raise EdgepickError(f"--budget: {exc}") from None
    req = DoctorRequest(target=target_path, symptom=symptom, reference=ref, prompts=prompts,
                        budget_bytes=budget_bytes, budget_s=time_budget, threads=threads,
                        checks=check or None, sustain_worker=sustain_worker)
    t = texts("doctor", lang)
    if remote is not None:
        say_remote([remote])  # the bytes its header cost, on stderr
    if not json_out:
        _say_plan(req, t, target, symptom, check, remote, time_budget)

    def on_check(cr, left: float) -> None:
        if not json_out:
            err_console.print(f"  {cr.check}: {cr.status} ({cr.seconds:.1f} s; "
                              f"{max(left, 0):.0f} s left)"
                              + (f" — {cr.note}" if cr.note and cr.status != "finding"
                                 else ""), highlight=False)

    with _progress(not json_out) as cb, open_store(store) as rs:
        report = (run_remote(req, remote, rs, cb or silent, on_check=on_check)
                  if remote is not None else run(req, rs, cb or silent, on_check=on_check))
    if report.kind == "deploy":
        folder = report_dir_of(target)
        if folder is not None:
            touched = append_to_report(folder, report, ["en", "zh"])
            if touched and not json_out:
                err_console.print(f"doctor section written into {folder}/report.*",
                                  highlight=False)
    if json_out:
        print_json(report)
        return 1 if report.findings else 0
    _print_report(report, t, target, remote, lang)
    return 1 if report.findings else 0


def register(app: typer.Typer) -> None:
    app.command()(doctor)
