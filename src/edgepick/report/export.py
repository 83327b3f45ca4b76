"""CSV and JSON of every figure and table, written next to the report."""

from __future__ import annotations

import csv
import json
from pathlib import Path


def write_rows(path_stem: Path, rows: list[dict]) -> list[Path]:
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    js = path_stem.with_suffix(".json")
    js.write_text(json.dumps(rows, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    cs = path_stem.with_suffix(".csv")
    fields = list(dict.fromkeys(k for r in rows for k in r)) or ["empty"]
    with open(cs, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return [cs, js]


def write_table(path_stem: Path, header: list[str], rows: list[list[str]]) -> list[Path]:
    return write_rows(path_stem, [dict(zip(header, r)) for r in rows])
