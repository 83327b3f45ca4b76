"""The one plugin registry (edgepick/plugins.py): entry points read lazily, a did-you-mean for a
misspelt name, run-time registration; and a scorer added from outside src/ through its entry
point group, as engines (tests/backends) and routers (tests/route) are."""

from __future__ import annotations

import sys

import pytest

from edgepick.errors import EdgepickError
from edgepick.plugins import Plugins

PLUGIN = '''
from edgepick.evaluate.scorers import ItemScore


class ShoutScorer:
    name = "shout"
    pass_rule = "the output is in capitals"

    def score(self, item, output):
        ok = output.isupper()
        return ItemScore(score=float(ok), correct=ok, format_ok=bool(output))
'''


def _dist(tmp_path, monkeypatch, group: str, line: str, module: str | None = None) -> None:
    if module is not None:
        (tmp_path / "shout_plugin.py").write_text(module)
    dist = tmp_path / "shout_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shout-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{group}]\n{line}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_target_is_imported_only_when_asked_for_and_checked(tmp_path, monkeypatch):
    (tmp_path / "lazy_target.py").write_text("VALUE = 41\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Plugins("edgepick.test-none", "widget", check=lambda name, obj, where: obj + 1)
    reg.register("answer", "lazy_target:VALUE")
    assert "lazy_target" not in sys.modules and "answer" in reg
    assert reg.load("answer") == 42 and "lazy_target" in sys.modules
    reg.register("direct", 1)  # an object is checked when registered
    assert reg.load("direct") == 2 and reg.names() == ["answer", "direct"]


def test_a_misspelt_name_gets_one_line_with_the_closest(tmp_path):
    reg = Plugins("edgepick.test-none", "widget")
    reg.register("llama_cpp", "x:y")
    with pytest.raises(EdgepickError, match=r"unknown widget 'llama_cp'; did you mean "
                                            r"'llama_cpp'\? \(known: llama_cpp\)"):
        reg.load("llama_cp")
    with pytest.raises(EdgepickError, match=r"widget 'llama_cpp' \(x:y\) could not be imported"):
        reg.load("llama_cpp")


def test_another_package_adds_a_scorer_through_its_entry_point(tmp_path, monkeypatch):
    from edgepick.evaluate import scorers

    assert scorers.get_scorer("qa").name  # the built-ins register first
    _dist(tmp_path, monkeypatch, "edgepick.scorers", "shout = shout_plugin:ShoutScorer", PLUGIN)
    # read the entry points again now, and forget the plugin after the test
    monkeypatch.setattr(scorers.SCORERS, "_targets", None)
    monkeypatch.setattr(scorers.SCORERS, "_loaded", dict(scorers.SCORERS._loaded))
    scorer = scorers.get_scorer("shout")
    assert scorer.score(None, "YES").correct and not scorer.score(None, "yes").correct
    assert scorers.get_scorer("qa").name
    with pytest.raises(EdgepickError, match="did you mean 'shout'"):
        scorers.get_scorer("shuot")
