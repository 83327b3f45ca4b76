"""docs/cli.md lists every command's flags, and each command's --help matches it: a new command
or flag fails here, by name, until it is documented. Also the conventions shared by commands."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from edgepick.cli.app import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _commands(cmd=None, path=()) -> dict[str, object]:
    """Every leaf command of the app, named as typed after `edgepick`."""
    cmd = cmd or typer.main.get_command(app)
    subs = getattr(cmd, "commands", None)
    if not subs:
        return {" ".join(path): cmd}
    out: dict[str, object] = {}
    for name, sub in subs.items():
        if not getattr(sub, "hidden", False):
            out.update(_commands(sub, (*path, name)))
    return out


def _flags(cmd) -> set[str]:
    out: set[str] = set()
    for p in cmd.params:
        if getattr(p, "hidden", False):
            continue
        if p.param_type_name == "argument":
            out.add(p.name.upper())
        else:
            out.update(p.opts, p.secondary_opts)
    return out


def _documented() -> dict[str, set[str]]:
    text = DOC.read_text(encoding="utf-8").split("\n## Commands", 1)[1]
    out: dict[str, set[str]] = {}
    current = None
    for line in text.splitlines():
        if m := re.match(r"### `edgepick ([a-z -]+)`", line):
            current = out.setdefault(m.group(1).strip(), set())
        elif current is not None and line.startswith("| `"):
            first = line.split("|")[1]
            current.update(re.findall(r"--?[a-z0-9][a-z0-9-]*|\b[A-Z][A-Z_]+\b", first))
    return out


def test_every_command_and_flag_is_documented_and_nothing_else():
    docs, cmds = _documented(), _commands()
    undocumented = sorted(set(cmds) - set(docs))
    assert not undocumented, f"commands missing from docs/cli.md: {', '.join(undocumented)}"
    stale = sorted(set(docs) - set(cmds))
    assert not stale, f"docs/cli.md documents commands that do not exist: {', '.join(stale)}"
    problems = []
    for name, cmd in sorted(cmds.items()):
        missing, extra = _flags(cmd) - docs[name], docs[name] - _flags(cmd)
        if missing:
            problems.append(f"edgepick {name}: undocumented {', '.join(sorted(missing))}")
        if extra:
            problems.append(f"edgepick {name}: documented but absent {', '.join(sorted(extra))}")
    assert not problems, "docs/cli.md and --help disagree:\n" + "\n".join(problems)


def test_every_command_has_help_text():
    bare = [name for name, cmd in _commands().items() if not (cmd.help or "").strip()]
    assert not bare, bare


def test_lists_are_comma_separated_or_repeated_alike():
    from edgepick.cli.options import int_list, split_list
    from edgepick.errors import EdgepickError

    assert split_list(["Q8_0,Q4_0", "Q4_K_M"]) == split_list(["Q8_0", "Q4_0,Q4_K_M"]) == \
        ["Q8_0", "Q4_0", "Q4_K_M"]
    assert int_list(["128, 512", "1024"], "--prompt-lengths") == [128, 512, 1024]
    for bad in (["1,x"], ["0"], []):
        try:
            int_list(bad, "--threads")
        except EdgepickError as exc:
            assert str(exc).startswith("--threads: expected")
        else:
            raise AssertionError(bad)


def test_old_spellings_still_work_with_one_deprecation_line(cli, tmp_path):
    r = cli("fit", "-m", "tiny", "--quant", "Q8_0", "--quant", "Q4_0,native", "--ctx", "256",
            "--ctx", "512", "--n-ubatch", "256", "--device", "raspberry-pi-5", "--json",
            "--store", str(tmp_path / "s.sqlite"))
    assert r.returncode == 0, r.stderr
    assert "note: --n-ubatch is deprecated; use --ubatch" in r.stderr
    import json

    rows = json.loads(r.stdout)
    assert [(x["quant"], x["ctx"]) for x in rows][:2] == [("Q8_0", 256), ("Q8_0", 512)]
    assert len(rows) == 6
    r = cli("inspect", "tiny", "--json")
    assert r.returncode == 0 and "note: the positional model is deprecated" in r.stderr
    for args in (["fidelity", "-c", "tiny", "-r", "tiny", "--ctx", "4", "--chunks", "1"],
                 ["quantize", "tiny", "--types", "Q9_9"]):
        r = cli(*args, "--store", str(tmp_path / "s.sqlite"))
        assert "is deprecated; use" in r.stderr and "Traceback" not in r.stderr, r.stderr
