"""`edgepick agent`: a guarded tool-calling agent on the edge model (seed 004 §4, docs/agent.md)."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import List, Optional

import typer

from edgepick.agent import Agent, LongTermMemory, Memory, load_tools
from edgepick.agent.embedding import embedder_for
from edgepick.agent.model import BackendModel
from edgepick.backends.base import CHAT_TEMPLATE, TOKENIZE
from edgepick.cli.output import console, err_console, print_json
from edgepick.errors import EdgepickError
from edgepick.inputs import resolve_ref
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.route.context import BackendTokenizer, ContextBuilder, ServerTokenizer
from edgepick.units import parse_size


def _confirm(auto_yes: bool):
    def ask(name: str, args: dict) -> bool:
        if auto_yes:
            err_console.print(f"[yellow]confirmed by --yes:[/] {name} {json.dumps(args, ensure_ascii=False)}")
            return True
        try:
            return typer.confirm(f"Run destructive tool {name} with "
                                 f"{json.dumps(args, ensure_ascii=False)}?", default=False,
                                 err=True)
        except (typer.Abort, EOFError):
            return False

    return ask


def _print_run(run) -> None:
    console.print(f"[bold]> {run.prompt}[/]", highlight=False)
    for s in run.steps:
        what = s.tool or ""
        args = json.dumps(s.arguments, ensure_ascii=False) if s.arguments is not None else ""
        line = f"  step {s.step} [{s.validation}] {what} {args}".rstrip()
        console.print(line + f"  ({s.generate_s * 1000:.0f} ms)", highlight=False)
        for r in s.repairs:
            console.print(f"    repaired {r['kind']}: {r['detail']}", highlight=False)
        if s.error:
            console.print(f"    [red]refused:[/] {s.error[:160]}", highlight=False)
        if s.confirmed is not None:
            console.print(f"    confirmation: {'yes' if s.confirmed else 'no'}")
        if s.result is not None:
            console.print(f"    result{'' if s.result_ok else ' (error)'}: {s.result[:200]}",
                          highlight=False)
    console.print(f"  [bold]{run.status}[/]: {run.answer or '(no answer)'}", highlight=False)


def _summary(runs) -> dict:
    steps = [s for r in runs for s in r.steps]
    calls = [s for s in steps if s.validation != "answer"]
    return {"runs": len(runs), "steps": len(steps), "calls_proposed": len(calls),
            "repaired": sum(bool(s.repairs) for s in calls),
            "refused": sum(s.validation not in ("answer", "call") for s in steps),
            "step_ms_median": statistics.median(s.step_s for s in steps) * 1000 if steps else None,
            "status": {k: sum(r.status == k for r in runs) for k in {r.status for r in runs}}}


def register(app: typer.Typer) -> None:
    @app.command("agent")
    def agent_cmd(
        model: str = typer.Option(..., "--model", "-m",
                                  help="the edge model: GGUF path, bundled name, or "
                                       "http://host:port/v1#name (e.g. edgepick serve)"),
        tools: Path = typer.Option(..., "--tools", help="tools.yaml (format: docs/agent.md)"),
        prompt: Optional[List[str]] = typer.Option(None, "--prompt", "-p",
                                                   help="a request (repeatable); none: read one "
                                                        "request per line from stdin"),
        sandbox: Optional[Path] = typer.Option(None, "--sandbox",
                                               help="folder the built-in file tools may touch "
                                                    "(overrides tools.yaml's sandbox)"),
        max_steps: int = typer.Option(4, "--max-steps", min=1, help="model proposals per request"),
        retries: int = typer.Option(2, "--retries", min=0,
                                    help="refused calls in a row sent back to the model"),
        max_tokens: int = typer.Option(128, "--max-tokens", min=8, help="tokens per proposal"),
        yes: bool = typer.Option(False, "--yes",
                                 help="confirm every destructive call without asking"),
        memory: Optional[Path] = typer.Option(None, "--memory",
                                              help="long-term memory (SQLite), kept across runs"),
        memory_entries: int = typer.Option(256, "--memory-entries", min=1,
                                           help="cap on stored summaries"),
        memory_bytes: str = typer.Option("1MiB", "--memory-bytes", help="cap on the index size"),
        embed_model: Optional[str] = typer.Option(None, "--embed-model",
                                                  help="embedding model for memory "
                                                       "(default: the agent's model)"),
        mode: Optional[str] = typer.Option(None, "--tool-format",
                                           help="native (the model's template) or json; "
                                                "default: native when the template takes tools"),
        threads: int = typer.Option(2, "--threads", help="inference threads"),
        ctx: int = typer.Option(2048, "--ctx", help="context length"),
        json_out: bool = typer.Option(False, "--json", help="print every step as JSON"),
    ) -> None:
        """Run requests through a guarded agent: validated calls, confirmation, bounded steps."""
        if mode not in (None, "native", "json"):
            raise EdgepickError(f"--tool-format: expected native or json, got '{mode}'")
        toolset = load_tools(tools, sandbox)
        ref = resolve_ref(model)
        cand = Candidate(ref=ref, settings=RuntimeSettings(threads=threads, n_ctx=ctx))
        requests = list(prompt or [])
        if not requests:
            requests = [line.strip() for line in sys.stdin if line.strip()]
        if not requests:
            raise EdgepickError("no request: give --prompt or lines on stdin")
        runs = []
        with BackendModel(cand, mode) as m:
            mem = None
            if memory is not None:
                try:
                    cap = int(parse_size(memory_bytes))
                except ValueError as exc:
                    raise EdgepickError(f"--memory-bytes: {exc}") from None
                embedder = embedder_for(resolve_ref(embed_model).locator if embed_model
                                        else ref.locator, threads)
                lt = LongTermMemory(memory, embedder, max_entries=memory_entries, max_bytes=cap)
                mem = Memory(lt, summarise=m.summarise)
            agent = Agent(m, toolset, confirm=_confirm(yes), memory=mem,
                          context=_context_builder(m, ref, ctx), max_steps=max_steps,
                          max_retries=retries, max_tokens=max_tokens)
            for req in requests:
                run = agent.run(req)
                runs.append(run)
                if not json_out:
                    _print_run(run)
            if mem is not None:
                mem.long_term.close()
                embedder.close()
        summary = _summary(runs)
        if json_out:
            print_json({"model": ref.label, "tool_format": m.mode,
                        "runs": [r.model_dump(mode="json") for r in runs], "summary": summary})
        else:
            console.print(f"{summary['runs']} request(s), {summary['steps']} step(s): "
                          f"{summary['repaired']} call(s) repaired, {summary['refused']} refused; "
                          f"median step {summary['step_ms_median']:.0f} ms "
                          f"(tool format: {m.mode})", highlight=False)


def _context_builder(m, ref, window: int):
    """The route's context builder (system / task context / user, ≤ 70% of the window)."""
    if m.backend.supports(CHAT_TEMPLATE) and m.backend.supports(TOKENIZE):
        return ContextBuilder(BackendTokenizer(m.backend), window)
    if ref.is_endpoint:
        return ContextBuilder(ServerTokenizer(ref.url), window)
    return None
