"""`edgepick ARGS` as a user runs it: one helper for every test folder (a module of its own,
since `from conftest import` finds whichever conftest pytest imported last).

A call runs the CLI's own entry point (`edgepick.cli.app:main`, what `python -m edgepick` calls) in
this process, with stdin, stdout and stderr of its own, and answers as the process would: its exit
code, its output, a traceback and exit 1 for an escaped exception. Starting a Python for every
call re-imported the CLI each time (about a second apiece, over two hundred calls in the suite).
A call that sets environment variables or a time limit runs as a real process: environment read
at import (the console's COLUMNS) and a time limit need one, and so do the commands whose process
is the point (PROCESS_COMMANDS) and any test that asks for one (`run_process`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from pathlib import Path


def run_process(*args: str, env: dict | None = None,
                timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `python -m edgepick ARGS` in a process of its own, capturing output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "edgepick", *args], capture_output=True,
                          text=True, env=full_env, timeout=timeout)


def _exit_code(code: object) -> int:
    """The process exit status `sys.exit(code)` gives (Python prints a non-int code to stderr)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_in_process(*args: str) -> subprocess.CompletedProcess:
    """`python -m edgepick ARGS` without the new interpreter: same exit code, stdout and stderr
    (and the same program name in a usage line)."""
    from typer import _click
    from typer.testing import CliRunner

    import edgepick
    from edgepick.cli.app import main

    detect, argv = _click.utils._detect_program_name, sys.argv
    _click.utils._detect_program_name = lambda *a, **k: "python -m edgepick"
    # what `python -m edgepick ARGS` sees: the run's recorded command line is read from it
    sys.argv = [str(Path(edgepick.__file__).with_name("__main__.py")), *args]
    try:
        with CliRunner().isolation() as (out, err, _):
            try:
                main(list(args))
                code = 0
            except SystemExit as exc:
                code = _exit_code(exc.code)
            except Exception:  # noqa: BLE001 - what the interpreter does with an escaped error
                traceback.print_exc(file=sys.stderr)
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            stdout, stderr = out.getvalue(), err.getvalue()
    finally:
        _click.utils._detect_program_name, sys.argv = detect, argv
    return subprocess.CompletedProcess(["edgepick", *args], code,
                                       stdout.decode("utf-8", "replace"),
                                       stderr.decode("utf-8", "replace"))


# Commands whose process is the point: serve runs until it is stopped, node start joins a Ray
# cluster and takes SIGTERM, doctor provokes engine failures (crashes, out-of-memory) on purpose.
PROCESS_COMMANDS = {"serve", "node", "doctor"}


def run_cli(*args: str, env: dict | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run `edgepick ARGS` as a user would, capturing output: in this process unless the call
    sets environment variables or a time limit or runs one of PROCESS_COMMANDS (then as
    `python -m edgepick`)."""
    if env or timeout is not None or (args and args[0] in PROCESS_COMMANDS):
        return run_process(*args, env=env, timeout=600 if timeout is None else timeout)
    return run_in_process(*args)
