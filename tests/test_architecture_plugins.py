"""docs/architecture.md's "Add a ..." sections, one per plugin kind: each names the files that
define its contract and the test that installs one from outside src/; those files exist, and
every plugin group of pyproject.toml has its section."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
KINDS = {"engine": "edgepick.backends", "power source": "edgepick.power_sources",
         "router": "edgepick.routers", "scorer": "edgepick.scorers", "gate": "edgepick.gates"}


def _sections() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^### Add an? (.+)$", text, flags=re.M)
    return {name.strip(): body.split("\n## ")[0] for name, body in zip(parts[1::2], parts[2::2])}


def test_each_plugin_kind_has_an_add_one_section_whose_files_exist():
    sections = _sections()
    assert set(sections) == set(KINDS)
    for kind, body in sections.items():
        (line,) = [ln for ln in body.splitlines() if ln.startswith("Files: ")]
        files = re.findall(r"`([^`]+)`", line)
        assert files and any(f.startswith("tests/") for f in files), kind
        missing = [f for f in files if not (ROOT / f).is_file()]
        assert not missing, f"docs/architecture.md, Add a {kind}: no such file {missing}"


def test_every_plugin_group_of_pyproject_is_a_documented_kind():
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert {g for g in groups if g.startswith("edgepick.")} == set(KINDS.values())
