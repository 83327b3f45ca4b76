"""`edgepick --help` and each command's help reflow to the terminal's width: a docstring's own
line breaks never cut a sentence (issue 23 item 7: "prompt length, threads,⏎concurrency")."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from edgepick.cli.app import reflow


def _help(columns: int, *args: str) -> str:
    env = dict(os.environ, COLUMNS=str(columns), TERM="dumb")
    p = subprocess.run([sys.executable, "-m", "edgepick", *args, "--help"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_a_docstring_paragraph_becomes_one_line_and_a_list_keeps_its_lines():
    assert reflow("Measure speed; sweep prompt length, threads,\n    concurrency.\n\n    More.") == \
        "Measure speed; sweep prompt length, threads, concurrency.\n\nMore."
    assert reflow("Steps:\n- one\n- two") == "Steps:\n- one\n- two"


def test_a_wide_terminal_keeps_each_short_help_on_one_line():
    text = _help(200)
    assert "sweep prompt length, threads, concurrency; sustained speed decay" in text
    assert "Verify the SHA-256" not in text  # models' subcommands are not listed here
    sub = _help(200, "models")
    assert "switch to it once healthy; the old version stays on disk" in sub


@pytest.mark.parametrize("args", [(), ("bench",), ("fit",), ("models",), ("route",)])
def test_a_narrow_terminal_wraps_within_its_width(args):
    lines = _help(60, *args).splitlines()
    assert lines and max(len(line) for line in lines) <= 60, max(lines, key=len)
