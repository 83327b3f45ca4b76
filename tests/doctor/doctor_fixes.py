"""Applying a finding's fix the way a user would (a module of its own: `from conftest import`
finds whichever conftest pytest imported last)."""

from __future__ import annotations

from pathlib import Path


def apply_fix(deploy: str, edit: dict) -> None:
    """Write a finding's deploy.yaml edit the way a user would."""
    import yaml

    data = yaml.safe_load(Path(deploy).read_text())
    for dotted, value in edit.items():
        node = data
        *parents, leaf = dotted.split(".")
        for p in parents:
            if not isinstance(node.get(p), dict):
                node[p] = {}
            node = node[p]
        node[leaf] = value
    Path(deploy).write_text(yaml.safe_dump(data, sort_keys=False))
