"""Every command's --help reads as words for people at 80 columns: no Python type names
(`<bool>`, `<list[str]>`, `<int range> [x>=1]`), no `{name}` placeholders, every option with a
default shows it, and an endpoint's syntax is never cut."""

from __future__ import annotations

import re

import pytest

from edgepick.cli import docgen
from edgepick.cli.app import SUMMARY_MAX

INTERNAL = re.compile(r"<(bool|int|float|str|text|path|list\[[^>]*\]|[a-z]+ range)>|\{[a-z_]+\}|"
                      r"\[x[<>]=|x<=")
ENDPOINT = "http://host:port/v1#"


def _all():
    return sorted(docgen.groups().items())


@pytest.mark.parametrize("name", [n for n, _ in _all()])
def test_help_has_no_internal_names_and_fits_80_columns(name, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    text = docgen.help_text(name)
    assert not INTERNAL.search(text), f"edgepick {name} --help: {INTERNAL.search(text).group()}"
    wide = [line for line in text.splitlines() if len(line) > 80]
    assert not wide, wide


def _shown_default(param, ctx) -> bool:
    record = param.get_help_record(ctx)
    return record is not None and "default" in record[1]


def test_every_option_with_a_default_shows_it():
    missing = []
    for name, (cmd, ctx) in docgen.commands().items():
        for p in cmd.get_params(ctx):
            if p.param_type_name != "option" or p.hidden or p.name == "help":
                continue
            default = p.get_default(ctx, call=False)
            if default in (None, [], ()) or (p.is_flag and not p.secondary_opts
                                             and default is False):
                continue  # no default, or a flag whose absence is the default
            if not _shown_default(p, ctx):
                missing.append(f"edgepick {name} {p.opts[0]} (default {default!r})")
    assert not missing, "defaults not shown:\n" + "\n".join(missing)


def test_serve_shows_its_real_defaults(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    text = " ".join(docgen.help_text("serve").split())
    for shown in ("[default: 8080]", "[default: 2]", "[default: 8]", "[default: 120",
                  "[default: 1024]"):
        assert shown in text, shown


def test_an_endpoint_is_written_whole_on_one_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    seen = 0
    for name, _ in _all():
        text = docgen.help_text(name)
        joined = " ".join(text.split())
        for m in re.finditer(r"https?://\S*", joined):
            url = m.group().rstrip(".,;)")
            assert any(url in line for line in text.splitlines()), f"{name}: {url} is cut"
            seen += ENDPOINT in url
    assert seen >= 3  # bench, eval, route eval … name the endpoint form


def test_summaries_say_what_a_command_produces(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    top = docgen.help_text("")
    assert "Prometheus alerting rules" in " ".join(top.split())
    for name, (cmd, _) in docgen.groups().items():
        if name:
            summary = cmd.get_short_help_str(limit=200)
            assert summary and len(summary) <= SUMMARY_MAX, f"edgepick {name}: {summary!r}"
