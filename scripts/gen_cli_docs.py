"""Regenerate docs/cli.md's command reference and docs/plan.md's `run` synopsis from the typer
app (src/edgepick/cli/docgen.py). Run after adding or changing a command or a flag:

    .venv/bin/python scripts/gen_cli_docs.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    os.environ["COLUMNS"] = "80"  # the pages show --help as an 80-column terminal prints it
    sys.path.insert(0, str(ROOT / "src"))
    from edgepick.cli.docgen import write_all

    changed = write_all(ROOT)
    for path in changed:
        print(f"written: {path.relative_to(ROOT)}")
    if not changed:
        print("docs/cli.md and docs/plan.md are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
