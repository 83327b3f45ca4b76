"""Code explains itself: no comment, docstring or string under src/ cites an issue number or the
design document that is not in the repository; a reason is given in terms of the code, the
engine, a docs page, a public source or a seed (docs/sources.md)."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "edgepick"
CITATION = re.compile(r"\b[Ii]ssue\s+\d+|\bSPEC\s*§|\bSTYLE\.md\b|\bdesign doc")


def test_no_source_cites_an_issue_or_an_unpublished_document():
    found = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in (".py", ".yaml", ".md", ".html", ".json") or not path.is_file():
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if CITATION.search(line):
                found.append(f"{path.relative_to(SRC.parent)}:{n}: {line.strip()[:80]}")
    assert not found, "\n".join(found)
