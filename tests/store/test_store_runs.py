"""The results store: schema from named migrations, an old store upgraded in place, runs that own
their rows (reused rows too), and a one-line refusal of files that are not edgepick stores."""

from __future__ import annotations

import sqlite3

import pytest

from edgepick.errors import EdgepickError
from edgepick.store import ResultStore
from edgepick.store.migrations import MIGRATIONS

PREVIOUS_RELEASE = """CREATE TABLE IF NOT EXISTS results (
    kind TEXT NOT NULL, key TEXT NOT NULL, label TEXT, payload TEXT NOT NULL,
    created REAL NOT NULL, PRIMARY KEY (kind, key));"""


def _tables(path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_schema_is_built_from_an_empty_database_by_every_migration(tmp_path):
    path = tmp_path / "new.sqlite"
    sqlite3.connect(path).close()  # an empty SQLite file counts as a new store
    with ResultStore(path) as st:
        assert st.schema_version == len(MIGRATIONS) >= 2
        assert st.runs() == []
    assert {"results", "runs", "run_rows", "_edgepick_migrations"} <= _tables(path)
    with sqlite3.connect(path) as db:
        names = [r[0] for r in db.execute("SELECT name FROM _edgepick_migrations")]
    assert sorted(names) == sorted(n for n, _ in MIGRATIONS)
    with ResultStore(path) as st:  # opening again applies nothing twice
        assert st.schema_version == len(MIGRATIONS)


def test_a_store_of_the_previous_release_is_upgraded_in_place(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(PREVIOUS_RELEASE)
        db.execute("INSERT INTO results VALUES ('bench', 'k1', 'a', '{\"x\": 1}', 100.0)")
        db.execute("INSERT INTO results VALUES ('eval', 'k2', 'b', '{\"y\": 2}', 200.0)")
    with ResultStore(path) as st:
        assert st.get("bench", "k1") == {"x": 1} and st.count() == 2
        (imported,) = st.runs()
        assert imported.created == 100.0 and imported.rows == {"bench": 1, "eval": 1}
        assert "before runs were recorded" in imported.command
        st.begin_run("edgepick bench")
        st.put("bench", "k3", {"x": 3})
        assert [r.rows for r in st.runs()] == [{"bench": 1, "eval": 1}, {"bench": 1}]


def test_every_row_belongs_to_a_run_and_a_reused_row_to_the_new_run_too(tmp_path):
    path = tmp_path / "s.sqlite"
    with ResultStore(path) as st:
        first = st.begin_run("edgepick eval", {"limit": 3}, data_sha256="abc")
        st.put("eval", "k", {"n": 3})
    with ResultStore(path) as st:
        assert st.get("eval", "k") == {"n": 3}  # reading outside a run makes no run
        assert [r.id for r in st.runs()] == [first]
        second = st.begin_run("edgepick eval", {"limit": 3})
        assert st.has("eval", "k")  # measured nothing: the row is reused, and so owned
        runs = {r.id: r for r in st.runs()}
        assert runs[first].rows == runs[second].rows == {"eval": 1}
        assert runs[first].settings == {"limit": 3} and runs[first].data_sha256 == "abc"
        rows = list(st.rows_with_runs("eval"))
        assert rows == [("k", {"n": 3}, [first, second])]


@pytest.mark.parametrize("content", [b"# a README\n", b"\x00" * 200])
def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path, content):
    path = tmp_path / "README.md"
    path.write_bytes(content)
    with pytest.raises(EdgepickError, match="not an edgepick results store"):
        ResultStore(path)
    assert path.read_bytes() == content


def test_another_programs_sqlite_database_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(EdgepickError, match="tables users"):
        ResultStore(path)
    assert _tables(path) == {"users"}


def test_a_store_from_a_newer_release_is_refused(tmp_path):
    path = tmp_path / "new.sqlite"
    ResultStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO _edgepick_migrations VALUES ('m999_future', 0)")
    with pytest.raises(EdgepickError, match="newer edgepick"):
        ResultStore(path)


def test_cli_store_errors_are_one_line(cli, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# not a store\n")
    for args in (["decide", "--store", str(readme)], ["runs", "--store", str(readme)],
                 ["decide", "--store", str(tmp_path / "missing.sqlite")]):
        r = cli(*args)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert readme.read_text() == "# not a store\n"
    assert not (tmp_path / "missing.sqlite").exists()
