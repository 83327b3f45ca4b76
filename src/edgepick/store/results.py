"""SQLite results store. One row per measured thing, keyed by (kind, content key).

Each write is its own committed transaction, so killing the process loses nothing already stored,
and WAL mode lets worker processes and the parent share the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    label TEXT,
    payload TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (kind, key)
);
"""


def default_store_path() -> Path:
    home = Path(os.environ.get("EDGEPICK_HOME", Path.home() / ".edgepick"))
    return home / "results.sqlite"


class ResultStore:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA busy_timeout=60000")
        self._conn.executescript(SCHEMA)

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        row = self._conn.execute(
            "SELECT payload FROM results WHERE kind=? AND key=?", (kind, key)).fetchone()
        return json.loads(row[0]) if row else None

    def has(self, kind: str, key: str) -> bool:
        return self._conn.execute(
            "SELECT 1 FROM results WHERE kind=? AND key=?", (kind, key)).fetchone() is not None

    def put(self, kind: str, key: str, payload: dict[str, Any], label: str | None = None) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO results (kind, key, label, payload, created) VALUES (?,?,?,?,?)",
            (kind, key, label, json.dumps(payload, default=str), time.time()))

    def delete(self, kind: str, key: str) -> None:
        self._conn.execute("DELETE FROM results WHERE kind=? AND key=?", (kind, key))

    def items(self, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for key, payload in self._conn.execute(
                "SELECT key, payload FROM results WHERE kind=? ORDER BY created", (kind,)):
            yield key, json.loads(payload)

    def count(self, kind: str | None = None) -> int:
        if kind is None:
            return self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        return self._conn.execute("SELECT COUNT(*) FROM results WHERE kind=?", (kind,)).fetchone()[0]

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
