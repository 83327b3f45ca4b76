"""What every command shares: list flags (comma-separated or repeated, one parser), deprecated
spellings, the results store and its run (docs/cli.md holds the conventions)."""

from __future__ import annotations

import shlex
import sys
from typing import Any, Iterable

from edgepick.errors import InputError
from edgepick.store import ResultStore
from edgepick.store.identity import file_sha256

try:  # Typer >= 0.20 runs on its own copy of click; older ones on click itself
    from typer._click.globals import get_current_context
except ImportError:
    from click import get_current_context

from edgepick.cli.output import err_console
from edgepick.errors import EdgepickError

STORE_HELP = "results store (SQLite) [default: $EDGEPICK_HOME/results.sqlite, ~/.edgepick]"
RUN_HELP = "run id from `edgepick runs`; repeat to combine runs [default: the latest]"


def split_list(values: Iterable[str] | str | None) -> list[str]:
    """`--x a,b --x c` and `--x a,b,c` both give [a, b, c]."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    return [p.strip() for v in values for p in str(v).split(",") if p.strip()]


def int_list(values: Iterable[str] | str | None, flag: str) -> list[int]:
    """Positive integers from a list flag, or a one-line error naming the flag."""
    parts = split_list(values)
    try:
        out = [int(p) for p in parts]
    except ValueError:
        raise EdgepickError(f"{flag}: expected comma-separated integers like 1,2,4, got "
                            f"'{','.join(parts)}'") from None
    if not out or any(v < 1 for v in out):
        raise EdgepickError(f"{flag}: expected positive integers, got '{','.join(parts)}'")
    return out


def deprecated(old: str, new: str) -> None:
    err_console.print(f"note: {old} is deprecated; use {new}", highlight=False, soft_wrap=True)


def merged(new: Any, old: Any, old_flag: str, new_flag: str) -> Any:
    """The value of a flag that may also come by its old, hidden spelling (which then wins)."""
    if old in (None, [], ()):
        return new
    deprecated(old_flag, new_flag)
    return old


def one_model(models: list[str] | None, positional: str | None, what: str) -> str:
    """The single model of a command that takes one (`-m`), or its deprecated positional form."""
    names = split_list(models)
    if positional:
        deprecated(f"the positional {what}", "-m/--model")
        names = [positional, *names]
    if len(names) != 1:
        raise EdgepickError(f"-m/--model: expected one {what}, got {len(names) or 'none'}")
    return names[0]


def _context():
    return get_current_context(silent=True)


def _params() -> dict[str, Any]:
    ctx = _context()
    return dict(ctx.params) if ctx is not None else {}


def _command() -> str:
    """The command line as typed when it came from sys.argv, else the command's name."""
    ctx = _context()
    name = ctx.info_name if ctx is not None else None
    if name and name in sys.argv[1:2]:
        return "edgepick " + shlex.join(sys.argv[1:])
    return ctx.command_path if ctx is not None else "edgepick"


def open_store(path: str | None, data: str | None = None, *, run: bool = True):
    """The results store, with a run begun for this invocation: its command line, its settings
    (every flag's value) and the data file's hash."""
    sha = None
    if run and data:
        try:
            sha = file_sha256(data)
        except OSError as exc:  # one line, and no run recorded for an input that is not there
            raise InputError(data, f"cannot read ({exc.strerror})") from None
    store = ResultStore(path or None)
    if run:
        store.begin_run(_command(), _params(), data_sha256=sha)
    return store
