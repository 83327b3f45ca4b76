"""docs/cli.md's command reference and docs/plan.md's `run` synopsis are what the typer app
makes of itself (edgepick.cli.docgen): a renamed, added or removed command or flag, or a changed
default or help line, fails here until the pages are regenerated."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgepick.cli import docgen

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("page, make", [("docs/cli.md", docgen.cli_reference),
                                        ("docs/plan.md", docgen.plan_synopsis)])
def test_the_generated_reference_is_fresh(page, make, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    current = (ROOT / page).read_text(encoding="utf-8")
    fresh = make(current)
    if fresh != current:
        old, new = current.splitlines(), fresh.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b),
                     min(len(old), len(new)))
        pytest.fail(f"{page} is stale (first difference at line {first + 1}: "
                    f"{(old[first] if first < len(old) else '<end>')!r} → "
                    f"{(new[first] if first < len(new) else '<end>')!r}); regenerate it with: "
                    f"{docgen.REGENERATE}")


def test_a_renamed_flag_makes_the_reference_stale(monkeypatch):
    current = (ROOT / "docs/cli.md").read_text(encoding="utf-8")
    assert "| `--min-sampled` |" in current
    renamed = current.replace("| `--min-sampled` |", "| `--min-samples` |")
    assert docgen.cli_reference(renamed) != renamed


def test_every_command_has_a_section():
    text = (ROOT / "docs/cli.md").read_text(encoding="utf-8")
    for name in docgen.commands():
        assert f"### `edgepick {name}`" in text, name
