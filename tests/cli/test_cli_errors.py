"""Bad input gets click's usage message or one line naming the file, never a traceback."""

import pytest

from edgepick.errors import EdgepickError, InputError
from edgepick.yaml_input import read_yaml


def _one_line_error(r, *needles):
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    for n in needles:
        assert n in r.stderr, r.stderr


def test_a_mistyped_flag_prints_usage_and_the_close_flag(cli):
    r = cli("decide", "--nosuchflag", "x")
    _one_line_error(r, "Usage:", "No such option: --nosuchflag")
    _one_line_error(cli("decide", "--stor", "x"), "Usage:", "--store")


def test_an_unknown_command_prints_usage_and_did_you_mean(cli):
    _one_line_error(cli("nosuch"), "Usage:", "No such command 'nosuch'")
    _one_line_error(cli("fti"), "Did you mean 'fit'?")


def test_a_plan_that_is_not_utf8_is_one_line(cli, tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(b"device: local\nname: caf\xe9\n")
    r = cli("run", str(plan))
    _one_line_error(r, f"{plan}:2: not UTF-8 text")
    assert len(r.stderr.strip().splitlines()) == 1


def test_unreadable_yaml_files_name_the_file(tmp_path):
    with pytest.raises(InputError, match="not UTF-8 text"):
        bad = tmp_path / "dev.yaml"
        bad.write_bytes(b"\xff\xfe")
        read_yaml(bad)
    with pytest.raises(InputError, match="is a directory"):
        read_yaml(tmp_path)
    with pytest.raises(InputError, match="cannot read the file"):
        read_yaml(tmp_path / "missing.yaml")


def test_a_store_that_is_not_sqlite_is_one_line(cli, tmp_path):
    not_a_store = tmp_path / "README.md"
    not_a_store.write_text("# not a database\n" * 200)
    _one_line_error(cli("decide", "--store", str(not_a_store)), str(not_a_store))
    from edgepick.store import ResultStore

    with pytest.raises(EdgepickError, match="not an edgepick results store"):
        ResultStore(not_a_store)


def test_a_missing_data_file_and_a_refused_value_are_one_line(cli, tmp_path):
    store = str(tmp_path / "s.sqlite")
    for cmd in (["eval", "-m", "tiny", "-r", "tiny", "-d", "nosuch.jsonl"],
                ["fidelity", "-m", "tiny", "-r", "tiny", "--text", "nosuch.jsonl"]):
        r = cli(*cmd, "--store", store)
        _one_line_error(r, "nosuch.jsonl: cannot read")
        assert len(r.stderr.strip().splitlines()) == 1
    # a value typer passes on but the stage's request refuses
    r = cli("fidelity", "-m", "tiny", "-r", "tiny", "--threads", "0", "--store", store)
    _one_line_error(r, "error: threads:", "(got 0)")
