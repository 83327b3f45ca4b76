"""A results store the user cannot open or write is one line naming the path, never a traceback
(issue 23 item 7: `sqlite3.OperationalError: unable to open database file`)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from edgepick.errors import EdgepickError
from edgepick.store import ResultStore


def test_a_store_under_a_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(EdgepickError, match=r"file/r\.db: cannot open the results store there"):
        ResultStore(tmp_path / "file" / "r.db")


def test_sqlite_refusing_the_file_is_one_line(tmp_path, monkeypatch):
    import edgepick.store.results as results

    def refuse(*args, **kwargs):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(results.sqlite3, "connect", refuse)
    with pytest.raises(EdgepickError, match=r"r\.db: cannot open the results store there "
                                            r"\(unable to open database file\).*writable"):
        ResultStore(tmp_path / "r.db")


def test_a_read_only_folder_is_one_line(tmp_path):
    """A valid store whose folder takes no new file: SQLite cannot create the WAL journal
    beside it, and says `unable to open database file`."""
    ResultStore(tmp_path / "r.db").close()  # a valid store (closing removes its -wal, -shm)
    tmp_path.chmod(0o555)
    try:
        if os.access(tmp_path, os.W_OK):
            # root writes a read-only folder anyway (CI runs as root); the journal's name taken
            # by a folder refuses it the same way, with the same sqlite error
            (tmp_path / "r.db-wal").mkdir()
        with pytest.raises(EdgepickError, match=r"r\.db: cannot open the results store there "
                                                r"\(unable to open database file\)"):
            ResultStore(tmp_path / "r.db").begin_run("x")
    finally:
        tmp_path.chmod(0o755)


def test_a_journal_sqlite_cannot_create_is_one_line_for_every_user(tmp_path):
    ResultStore(tmp_path / "r.db").close()
    (tmp_path / "r.db-wal").mkdir()
    with pytest.raises(EdgepickError, match=r"r\.db: cannot open the results store there "
                                            r"\(unable to open database file\)"):
        ResultStore(tmp_path / "r.db")


@pytest.mark.parametrize("path, why", [
    ("/proc/edgepick-r.db", "unable to open database file"),  # procfs takes no file, even root's
    ("/proc/edgepick/r.db", "its folder /proc/edgepick")])
def test_a_store_on_a_filesystem_that_takes_no_files_is_one_line(path, why):
    with pytest.raises(EdgepickError, match=f"^{path}: cannot open the results store there "
                                            rf"\({why}"):
        ResultStore(path)


def test_the_cli_prints_the_line_and_no_traceback(tmp_path, tiny_model):
    (tmp_path / "file").write_text("x")
    p = subprocess.run([sys.executable, "-m", "edgepick", "fit", "-m", tiny_model, "--store",
                        str(tmp_path / "file" / "r.db")], capture_output=True, text=True)
    assert p.returncode != 0
    assert "cannot open the results store there" in p.stderr and "Traceback" not in p.stderr


def test_the_cli_prints_one_line_for_a_folder_that_refuses_the_journal(tmp_path, tiny_model):
    ResultStore(tmp_path / "r.db").close()
    (tmp_path / "r.db-wal").mkdir()
    p = subprocess.run([sys.executable, "-m", "edgepick", "fit", "-m", tiny_model, "--store",
                        str(tmp_path / "r.db")], capture_output=True, text=True)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    # fit says which device profile it used first; the failure is the one line after that
    errors = [ln for ln in p.stderr.splitlines() if "results store" in ln]
    assert len(errors) == 1 and p.stderr.strip().endswith(errors[0])
    assert errors[0].startswith("error: ") and "(unable to open database file)" in errors[0]
