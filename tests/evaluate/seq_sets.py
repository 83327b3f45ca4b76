"""Small eval sets and the 5% unacceptable gate for the sequential-evaluation tests (a helper
module, imported by name: conftest is not imported from)."""

from __future__ import annotations

import json

from edgepick.evaluate.seq_gates import EvalGate

UNACCEPTABLE = EvalGate(metric="unacceptable_rate", direction="max", limit=0.05,
                        scopes=("candidate", "task"))


def yes_no(n: int, difficulty=None) -> list[dict]:
    """n yes/no items answered "yes"; the prompt is the item id."""
    return [dict({"id": f"yn{i}", "task": "yes_no", "prompt": f"yn{i}", "reference": "yes"},
                 **({"difficulty": difficulty(i)} if difficulty else {})) for i in range(n)]


def classification(n: int, difficulty=None) -> list[dict]:
    """n positive/negative items answered "positive"; the prompt is the item id."""
    return [dict({"id": f"cl{i}", "task": "classification", "prompt": f"cl{i}",
                  "reference": "positive", "labels": ["positive", "negative"]},
                 **({"difficulty": difficulty(i)} if difficulty else {})) for i in range(n)]


def write_set(path, rows: list[dict]) -> str:
    path.write_text("\n".join(json.dumps(x) for x in rows) + "\n", encoding="utf-8")
    return str(path)
