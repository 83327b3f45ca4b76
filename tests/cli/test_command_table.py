"""The CLI lists its commands from cli/command_table.py and imports a command's module (and the
stage that module imports at its top) only when that command runs or prints its own help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from cli_runner import run_cli

from edgepick.cli import docgen
from edgepick.cli.command_table import COMMANDS

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_table_is_what_the_modules_register():
    current = (ROOT / docgen.TABLE_PATH).read_text(encoding="utf-8")
    assert docgen.command_table() == current, (
        f"{docgen.TABLE_PATH} is stale (a command added, renamed or its help changed); "
        f"regenerate it with: {docgen.REGENERATE}")


def _loaded_after(*args: str) -> tuple[list[str], str]:
    """The `edgepick.cli.cmd_*` modules a fresh process imported for `edgepick ARGS`, and what
    it printed."""
    code = textwrap.dedent(f"""
        import contextlib, io, json, sys
        from edgepick.cli.app import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                main({list(args)!r})
            except SystemExit:
                pass
        mods = sorted(m for m in sys.modules if m.startswith("edgepick.cli.cmd_"))
        print(json.dumps([mods, out.getvalue()]))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, COLUMNS="100"), check=True)
    mods, out = json.loads(done.stdout.splitlines()[-1])
    return mods, out


def test_the_command_list_imports_no_command_module():
    mods, out = _loaded_after("--help")
    assert mods == []
    for name, _modules, line in COMMANDS:
        assert f"  {name} " in out and line.split()[0] in out, name


def test_a_command_s_help_imports_its_own_module_only():
    mods, out = _loaded_after("bench", "--help")
    assert mods == ["edgepick.cli.cmd_bench"]
    assert out.startswith("Usage:") and " bench " in out.splitlines()[0]


def test_a_mistyped_command_gets_a_suggestion():
    r = run_cli("bnech")
    assert r.returncode == 2
    assert "No such command 'bnech'. Did you mean 'bench'?" in r.stderr
    r = run_cli("models", "pul")
    assert "Did you mean 'pull'?" in r.stderr


def test_every_listed_command_is_built_from_its_modules():
    names = [name for name, _modules, _line in COMMANDS]
    assert set(docgen.commands()) >= {n for n in names if n not in
                                      ("models", "node", "prune", "route", "update")}
    assert len(names) == len(set(names))
