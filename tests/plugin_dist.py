"""A tiny installed-looking package on a test's path: a module plus the dist-info whose
entry_points.txt registers it, the way another package's wheel would (no pip, no src/ change)."""

from __future__ import annotations

from pathlib import Path


def write_plugin(root: Path, dist: str, module: str, source: str, group: str,
                 entries: dict[str, str]) -> Path:
    """`root`/`module`.py holding `source`, and `root`/`dist`-1.0.dist-info registering
    `entries` (name -> "module:attr") in the entry point `group`. Returns `root`, to put on
    sys.path."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(source)
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entries.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")
    return root
