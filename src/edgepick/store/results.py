"""SQLite results store. One row per measured thing, keyed by (kind, content key), and every row
linked to the runs that produced or reused it (docs/architecture.md).

Each write is its own committed transaction, so killing the process loses nothing already stored,
and WAL mode lets worker processes and the parent share the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel

from edgepick.errors import EdgepickError
from edgepick.store.migrations import check_file, migrate, schema_version


def default_store_path() -> Path:
    home = Path(os.environ.get("EDGEPICK_HOME", Path.home() / ".edgepick"))
    return home / "results.sqlite"


def _cannot_open(path: Path, exc: Exception) -> str:
    if isinstance(exc, sqlite3.Error):
        why = str(exc)
    else:  # the folder could not be made
        why = f"its folder {path.parent}: {exc.strerror or exc}"
    return (f"{path}: cannot open the results store there ({why}); SQLite writes its journal "
            "beside the file, so the folder must be writable: fix its permissions, or give "
            "--store (or EDGEPICK_HOME) elsewhere")


class RunInfo(BaseModel):
    id: int
    created: float
    command: str
    settings: dict[str, Any]
    data_sha256: str | None = None
    rows: dict[str, int] = {}  # kind -> rows linked to the run


class ResultStore(AbstractContextManager):
    def __init__(self, path: str | Path | None = None, *, must_exist: bool = False):
        self.path = Path(path) if path else default_store_path()
        if must_exist and not self.path.is_file():
            raise EdgepickError(f"{self.path}: no results store there (run fit, bench, eval or "
                                "`edgepick run PLAN` first)")
        check_file(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        except (OSError, sqlite3.OperationalError) as exc:
            raise EdgepickError(_cannot_open(self.path, exc)) from None
        try:
            self._conn.execute("PRAGMA busy_timeout=60000")
            self._conn.execute("PRAGMA journal_mode=WAL")
            migrate(self._conn, self.path)
        except sqlite3.OperationalError as exc:  # a folder or file it may not write
            self._conn.close()
            raise EdgepickError(_cannot_open(self.path, exc)) from None
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise EdgepickError(f"{self.path}: not an edgepick results store ({exc})") from None
        except BaseException:
            self._conn.close()
            raise
        self.run_id: int | None = None

    @property
    def schema_version(self) -> int:
        return schema_version(self._conn)

    # -- runs ------------------------------------------------------------------------------
    def begin_run(self, command: str, settings: dict[str, Any] | None = None,
                  data_sha256: str | None = None) -> int:
        """Record an invocation; every row written or reused from now on is linked to it."""
        cur = self._conn.execute(
            "INSERT INTO runs (created, command, settings, data_sha256) VALUES (?,?,?,?)",
            (time.time(), command, json.dumps(settings or {}, default=str, sort_keys=True),
             data_sha256))
        self.run_id = cur.lastrowid
        return self.run_id

    def _current_run(self) -> int:
        if self.run_id is None:  # a caller of the Python API that began no run still owns rows
            self.begin_run("python " + " ".join(os.path.basename(a) for a in sys.argv[:1]))
        return self.run_id

    def link(self, kind: str, key: str) -> None:
        self._conn.execute("INSERT OR IGNORE INTO run_rows (run_id, kind, key) VALUES (?,?,?)",
                           (self._current_run(), kind, key))

    def _reused(self, kind: str, key: str) -> None:
        # Only inside a run: merely reading a store must not make a run of what was read.
        if self.run_id is not None:
            self.link(kind, key)

    def runs(self) -> list[RunInfo]:
        counts: dict[int, dict[str, int]] = {}
        for rid, kind, n in self._conn.execute(
                "SELECT run_id, kind, COUNT(*) FROM run_rows GROUP BY run_id, kind"):
            counts.setdefault(rid, {})[kind] = n
        return [RunInfo(id=rid, created=created, command=command, settings=json.loads(settings),
                        data_sha256=sha, rows=counts.get(rid, {}))
                for rid, created, command, settings, sha in self._conn.execute(
                    "SELECT id, created, command, settings, data_sha256 FROM runs ORDER BY id")]

    def run_ids(self) -> set[int]:
        return {r[0] for r in self._conn.execute("SELECT id FROM runs")}

    def rows_with_runs(self, kind: str) -> Iterator[tuple[str, dict[str, Any], list[int]]]:
        """(key, payload, ids of the runs that own it) for every row of `kind`, oldest first."""
        owners: dict[str, list[int]] = {}
        for key, rid in self._conn.execute(
                "SELECT key, run_id FROM run_rows WHERE kind=? ORDER BY run_id", (kind,)):
            owners.setdefault(key, []).append(rid)
        for key, payload in self._conn.execute(
                "SELECT key, payload FROM results WHERE kind=? ORDER BY created", (kind,)):
            yield key, json.loads(payload), owners.get(key, [])

    # -- rows ------------------------------------------------------------------------------
    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        """The stored payload; inside a run, a hit is reused and so linked to the run."""
        row = self._conn.execute(
            "SELECT payload FROM results WHERE kind=? AND key=?", (kind, key)).fetchone()
        if row is None:
            return None
        self._reused(kind, key)
        return json.loads(row[0])

    def has(self, kind: str, key: str) -> bool:
        """Whether the row is held; inside a run, a hit is reused and so linked to the run."""
        found = self._conn.execute(
            "SELECT 1 FROM results WHERE kind=? AND key=?", (kind, key)).fetchone() is not None
        if found:
            self._reused(kind, key)
        return found

    def put(self, kind: str, key: str, payload: dict[str, Any], label: str | None = None) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO results (kind, key, label, payload, created) VALUES (?,?,?,?,?)",
            (kind, key, label, json.dumps(payload, default=str), time.time()))
        self.link(kind, key)

    def delete(self, kind: str, key: str) -> None:
        self._conn.execute("DELETE FROM results WHERE kind=? AND key=?", (kind, key))
        self._conn.execute("DELETE FROM run_rows WHERE kind=? AND key=?", (kind, key))

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

    def __exit__(self, *exc: object) -> None:
        self.close()
