"""Entry point: the typer app over every `cmd_*` module, and errors turned into one line.

Each stage adds its commands in a `cmd_*` module of its own, which imports that stage at its
top. The app knows each top-level command's name, module and one-line summary from
`command_table` (generated from the modules by scripts/gen_cli_docs.py, checked by
tests/cli/test_command_table.py), and imports a command's module only when that command runs
or prints its own help: `edgepick --help` loads no stage, and `edgepick fit` loads fit alone.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from difflib import get_close_matches
from gettext import gettext as _

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from typer import _click as click  # the click typer vendors and builds on
from typer.core import TyperGroup

import edgepick.cli as cli_pkg
from edgepick.cli import help_format
from edgepick.cli.command_table import COMMANDS
from edgepick.errors import EdgepickError, pydantic_problem

help_format.install()

# What every typer the CLI builds shares: plain help (click's layout, one column of flags that
# wraps at any width, where rich's five-column table left 17 columns for the text at 80;
# docs/cli.md is made from the same), no completion, no pretty tracebacks.
SETTINGS = {"pretty_exceptions_enable": False, "add_completion": False,
            "rich_markup_mode": None}
TABLE = {name: (modules, line) for name, modules, line in COMMANDS}
_loaded: dict[str, click.Command] = {}  # commands built in this process, by name


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


def build(modules: tuple[str, ...]) -> dict[str, click.Command]:
    """The click commands that these `cmd_*` modules register, by name, as the app shows them."""
    sub = typer.Typer(**SETTINGS)
    for name in modules:
        importlib.import_module(f"edgepick.cli.{name}").register(sub)
    _reflow_help(sub)
    return dict(typer.main.get_group(sub).commands)


def forget_built() -> None:
    """Build every command again on its next lookup (after TABLE changed in this process)."""
    _loaded.clear()


class LazyGroup(TyperGroup):
    """The top-level group: lists and summarises its commands from `TABLE` and builds one (its
    module imported, its stage with it) only when it is looked up to run or to print its help."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*TABLE, *(name for name in self.commands if name not in TABLE)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name in TABLE and cmd_name not in _loaded:
            _loaded.update(build(TABLE[cmd_name][0]))
        return _loaded.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, line) for name, (_modules, line) in TABLE.items() if line is not None]
        rows += [(name, cmd.get_short_help_str()) for name, cmd in self.commands.items()
                 if name not in TABLE and not cmd.hidden]
        if rows:
            with formatter.section(_("Commands")):
                formatter.write_dl(rows)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        # typer's "did you mean" reads self.commands, which holds no command until one is built
        try:
            return self._click_resolve_command(ctx, args)
        except click.exceptions.UsageError as exc:
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if self.suggest_commands and matches:
                exc.message = (f"{exc.message.rstrip('.')}. Did you mean "
                               f"{', '.join(repr(m) for m in matches)}?")
            raise


app = typer.Typer(
    cls=LazyGroup,
    name="edgepick",
    help=reflow("Choose, prove and run the right LLM configuration for an edge device."),
    no_args_is_help=True,
    context_settings={"max_content_width": 200},  # a wide terminal keeps a summary on one line
    **SETTINGS,
)
err_console = Console(stderr=True)


@app.callback()
def _group() -> None:
    # typer makes a group only of an app with a callback or commands, and this one registers
    # its commands only when they are looked up
    pass


def _register_unlisted() -> None:
    """A `cmd_*` module the table does not name (added without regenerating it) is registered
    at start, as every module was before the table: its commands are listed and run, only not
    lazily. tests/cli/test_command_table.py asks for the table to be regenerated."""
    listed = {m for modules, _line in TABLE.values() for m in modules}
    for info in sorted(pkgutil.iter_modules(cli_pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("cmd_") and info.name not in listed:
            importlib.import_module(f"{cli_pkg.__name__}.{info.name}").register(app)
    _reflow_help(app)


_register_unlisted()


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
