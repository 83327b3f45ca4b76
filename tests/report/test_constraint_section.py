"""The report's constrained-output table (issue 34 item 5): a model measured free and under a
grammar gets both side by side, format errors and unacceptable answers with their intervals,
and the grammar's cost in speed where it was timed; a model never constrained gets no table."""

from __future__ import annotations

from edgepick.records.decision import CandidateSummary, Figure
from edgepick.report.constraint_section import constraint_groups, render_html, render_markdown


def _summary(constrain: str, fmt: Figure, speed: bool) -> CandidateSummary:
    figures = {"format_compliance": fmt,
               "unacceptable_rate": Figure(value=0.1, low=0.05, high=0.2, n=40)}
    if speed:
        figures |= {"grammar_decode_tps": Figure(value=24.0, n=8),
                    "free_decode_tps": Figure(value=30.0, n=8)}
    return CandidateSummary(candidate=f"m@constrain={constrain}", model="/x/m.gguf",
                            settings={"constrain": constrain, "variant": f"constrain={constrain}"},
                            figures=figures)


def test_free_and_constrained_side_by_side_with_the_grammars_cost():
    free = _summary("none", Figure(value=0.75, low=0.6, high=0.86, n=40), speed=False)
    grammar = _summary("grammar", Figure(value=1.0, low=0.91, high=1.0, n=40), speed=True)
    other = CandidateSummary(candidate="plain", model="/x/other.gguf")
    groups = constraint_groups([free, grammar, other])
    assert list(groups) == ["/x/m.gguf"]
    md = render_markdown(groups, "en")
    assert "## Constrained output of m.gguf" in md
    rows = {line.split("|")[1].strip(): line for line in md.splitlines()
            if line.startswith("| constrain=")}
    assert "25.0% [14.0%, 40.0%]" in rows["constrain=none"]  # format errors, interval turned
    assert "0.0% [0.0%, 9.0%]" in rows["constrain=grammar"]
    assert "24.0 / 30.0 (8), 20.0%" in rows["constrain=grammar"]  # the grammar costs a fifth
    assert "10.0% [5.0%, 20.0%]" in rows["constrain=none"]
    assert "约束输出" in render_markdown(groups, "zh") and "<table" in render_html(groups, "en")
    assert constraint_groups([free, other]) == {}
