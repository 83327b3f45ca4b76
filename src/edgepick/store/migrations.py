"""The results store's schema: named migrations, each applied once, in order (as simonw/llm
does). The store's schema version is the number applied; `PRAGMA application_id` marks the file
as an edgepick store. docs/decide.md: decisions work on one run, so every row belongs to a run.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Callable

from edgepick.errors import EdgepickError

APPLICATION_ID = 0x45504B31  # "EPK1"
MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = []
PREVIOUS_RELEASE_COLUMNS = ["kind", "key", "label", "payload", "created"]


def migration(fn: Callable[[sqlite3.Connection], None]) -> Callable[[sqlite3.Connection], None]:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
def m001_results(db: sqlite3.Connection) -> None:
    db.execute("""CREATE TABLE results (
        kind TEXT NOT NULL, key TEXT NOT NULL, label TEXT, payload TEXT NOT NULL,
        created REAL NOT NULL, PRIMARY KEY (kind, key))""")


@migration
def m002_runs(db: sqlite3.Connection) -> None:
    db.execute("""CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, command TEXT NOT NULL,
        settings TEXT NOT NULL, data_sha256 TEXT)""")
    db.execute("""CREATE TABLE run_rows (
        run_id INTEGER NOT NULL REFERENCES runs(id), kind TEXT NOT NULL, key TEXT NOT NULL,
        PRIMARY KEY (run_id, kind, key))""")
    db.execute("CREATE INDEX run_rows_by_row ON run_rows (kind, key)")
    # Rows written before runs existed: one run owns them all, dated by the oldest row.
    first = db.execute("SELECT MIN(created) FROM results").fetchone()[0]
    if first is not None:
        cur = db.execute("INSERT INTO runs (created, command, settings) VALUES (?, ?, '{}')",
                         (first, "(rows stored before runs were recorded)"))
        db.execute("INSERT INTO run_rows (run_id, kind, key) SELECT ?, kind, key FROM results",
                   (cur.lastrowid,))


def _tables(db: sqlite3.Connection) -> list[str]:
    return [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name")]


def _not_a_store(path: Path, why: str) -> EdgepickError:
    return EdgepickError(f"{path}: not an edgepick results store ({why})")


def check_file(path: Path) -> None:
    """A one-line error for anything that is not an SQLite file, before SQLite sees it."""
    if path.is_dir():
        raise _not_a_store(path, "a directory")
    if path.is_file() and path.stat().st_size > 0:
        with open(path, "rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                raise _not_a_store(path, "not an SQLite database")


def _current(db: sqlite3.Connection) -> bool:
    """Whether every migration is applied already (a read: no write lock for the common case)."""
    if "_edgepick_migrations" not in _tables(db):
        return False
    applied = {r[0] for r in db.execute("SELECT name FROM _edgepick_migrations")}
    return applied == {name for name, _ in MIGRATIONS}


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the store to the current schema in place, or refuse a database that is not ours."""
    if _current(db):
        return
    db.execute("BEGIN IMMEDIATE")  # two processes opening a new store migrate it once
    try:
        tables = _tables(db)
        if "_edgepick_migrations" in tables:
            applied = {r[0] for r in db.execute("SELECT name FROM _edgepick_migrations")}
            unknown = applied - {name for name, _ in MIGRATIONS}
            if unknown:
                raise EdgepickError(f"{path}: written by a newer edgepick (migration "
                                    f"{sorted(unknown)[0]}); upgrade edgepick to read it")
        elif not tables:
            applied = set()
        elif tables == ["results"] and [r[1] for r in db.execute(
                "PRAGMA table_info(results)")] == PREVIOUS_RELEASE_COLUMNS:
            applied = {"m001_results"}  # the previous release's single table
        else:
            raise _not_a_store(path, f"an SQLite database with tables {', '.join(tables)}")
        db.execute("CREATE TABLE IF NOT EXISTS _edgepick_migrations "
                   "(name TEXT PRIMARY KEY, applied REAL NOT NULL)")
        for name, fn in MIGRATIONS:
            if name not in applied:
                fn(db)
                applied.add(name)
            db.execute("INSERT OR IGNORE INTO _edgepick_migrations VALUES (?, ?)",
                       (name, time.time()))
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def schema_version(db: sqlite3.Connection) -> int:
    return db.execute("PRAGMA user_version").fetchone()[0]
