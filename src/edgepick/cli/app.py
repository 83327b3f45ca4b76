"""Entry point: builds the typer app from every `cmd_*` module and turns errors into one line.

Command modules are discovered rather than listed so that each stage adds its commands in a
file of its own.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

import edgepick.cli as pkg
from edgepick.cli import help_format
from edgepick.errors import EdgepickError, pydantic_problem

help_format.install()

app = typer.Typer(
    name="edgepick",
    help="Choose, prove and run the right LLM configuration for an edge device.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Plain help (click's layout): one column of flags that wraps at any width, where rich's
    # five-column table left 17 columns for the text at 80 (docs/cli.md is made from the same).
    rich_markup_mode=None,
    context_settings={"max_content_width": 200},  # a wide terminal keeps a summary on one line
)
err_console = Console(stderr=True)


def _register_commands() -> None:
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("cmd_"):
            module = importlib.import_module(f"edgepick.cli.{info.name}")
            module.register(app)


def reflow(text: str | None) -> str | None:
    """A help text's paragraphs each on one line, so the terminal wraps them at its own width:
    a docstring's line breaks (kept within 100 columns of source) would otherwise break the
    command list mid-sentence. A paragraph holding a list or indented lines keeps its lines."""
    if not text:
        return text
    out = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines = para.splitlines()
        kept = para.startswith("\b") or any(
            line.startswith(" ") or line.lstrip().startswith(("-", "*", "•", "|"))
            for line in lines[1:])
        out.append(para if kept else " ".join(line.strip() for line in lines))
    return "\n\n".join(out)


SUMMARY_MAX = 160


def summary(text: str | None) -> str | None:
    """A command's line in its group's list: the help's first paragraph, whole (click would cut
    it at a width-dependent count of characters, mid-word); a long one, its first sentence or
    clause, then without its parentheses, so that the list stays a list."""
    if not text:
        return text
    line = text.split("\n\n", 1)[0]
    for stop in (". ", "; "):
        if len(line) > SUMMARY_MAX and stop in line:
            line = line.split(stop, 1)[0] + "."
    if len(line) > SUMMARY_MAX:  # still long: without its parentheses
        line = re.sub(r" \([^()]*\)", "", line)
    return line


def _reflow_help(t: typer.Typer) -> None:
    t.info.help = reflow(t.info.help)
    for info in t.registered_commands:
        info.help = reflow(info.help or inspect.getdoc(info.callback))
        info.short_help = info.short_help or summary(info.help)
    for group in t.registered_groups:
        group.help = reflow(group.help)
        if group.typer_instance is not None:
            _reflow_help(group.typer_instance)
            group.short_help = group.short_help or summary(
                group.help or group.typer_instance.info.help)


_register_commands()
_reflow_help(app)


def main(argv: list[str] | None = None) -> None:
    try:
        rc = app(args=argv, standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except EdgepickError as exc:
        # Escaped: a message may hold brackets (pip install 'edgepick[ray]', a JSON path).
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False,
                          soft_wrap=True)
        sys.exit(2)
    except ValidationError as exc:
        # A value the CLI passed on but a request record refuses (e.g. --threads 0): one line
        # per field, never a traceback.
        for e in exc.errors():
            field, problem = pydantic_problem(e)
            err_console.print(f"[bold red]error:[/] {escape(field or exc.title)}: "
                              f"{escape(problem)} (got {escape(repr(e.get('input')))})",
                              highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted; results stored so far are kept")
        sys.exit(130)
    except SystemExit:
        raise
    except typer.Abort:
        sys.exit(1)
    except typer.TyperException as exc:
        # Usage errors (unknown flag or command, bad value) from the click that typer vendors:
        # its usage line, the message and its "did you mean", never a traceback.
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            err_console.print(f"[bold red]error:[/] {exc.format_message()}", highlight=False)
        sys.exit(exc.exit_code or 2)
