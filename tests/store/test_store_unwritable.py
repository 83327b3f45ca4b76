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
    ResultStore(tmp_path / "r.db").close()  # a valid store, then its folder made read-only
    tmp_path.chmod(0o555)
    try:
        if os.access(tmp_path, os.W_OK):
            pytest.skip("this user writes a read-only folder anyway (root)")
        with pytest.raises(EdgepickError, match="cannot open the results store there"):
            ResultStore(tmp_path / "r.db").begin_run("x")
    finally:
        tmp_path.chmod(0o755)


def test_the_cli_prints_the_line_and_no_traceback(tmp_path, tiny_model):
    (tmp_path / "file").write_text("x")
    p = subprocess.run([sys.executable, "-m", "edgepick", "fit", "-m", tiny_model, "--store",
                        str(tmp_path / "file" / "r.db")], capture_output=True, text=True)
    assert p.returncode != 0
    assert "cannot open the results store there" in p.stderr and "Traceback" not in p.stderr
