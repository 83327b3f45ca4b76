"""The conventions shared by commands (every command has help text; lists; old spellings).
docs/cli.md itself is generated from the app and checked fresh by tests/docs/test_cli_reference.py."""

from __future__ import annotations


def test_every_command_has_help_text():
    from edgepick.cli.docgen import commands

    bare = [name for name, (cmd, _) in commands().items() if not (cmd.help or "").strip()]
    assert not bare, bare


def test_lists_are_comma_separated_or_repeated_alike():
    from edgepick.cli.options import int_list, split_list
    from edgepick.errors import EdgepickError

    assert split_list(["Q8_0,Q4_0", "Q4_K_M"]) == split_list(["Q8_0", "Q4_0,Q4_K_M"]) == \
        ["Q8_0", "Q4_0", "Q4_K_M"]
    assert int_list(["128, 512", "1024"], "--prompt-lengths") == [128, 512, 1024]
    for bad in (["1,x"], ["0"], []):
        try:
            int_list(bad, "--threads")
        except EdgepickError as exc:
            assert str(exc).startswith("--threads: expected")
        else:
            raise AssertionError(bad)


def test_old_spellings_still_work_with_one_deprecation_line(cli, tmp_path):
    r = cli("fit", "-m", "tiny", "--quant", "Q8_0", "--quant", "Q4_0,native", "--ctx", "256",
            "--ctx", "512", "--n-ubatch", "256", "--device", "raspberry-pi-5", "--json",
            "--store", str(tmp_path / "s.sqlite"))
    assert r.returncode == 0, r.stderr
    assert "note: --n-ubatch is deprecated; use --ubatch" in r.stderr
    import json

    rows = json.loads(r.stdout)
    assert [(x["quant"], x["ctx"]) for x in rows][:2] == [("Q8_0", 256), ("Q8_0", 512)]
    assert len(rows) == 6
    r = cli("inspect", "tiny", "--json")
    assert r.returncode == 0 and "note: the positional model is deprecated" in r.stderr
    for args in (["fidelity", "-c", "tiny", "-r", "tiny", "--ctx", "4", "--chunks", "1"],
                 ["quantize", "tiny", "--types", "Q9_9"]):
        r = cli(*args, "--store", str(tmp_path / "s.sqlite"))
        assert "is deprecated; use" in r.stderr and "Traceback" not in r.stderr, r.stderr
