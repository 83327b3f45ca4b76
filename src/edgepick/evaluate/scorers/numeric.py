"""Arithmetic: the answer's number against the reference number.

The answer's number, in this order: the first number after the LAST answer marker ("answer",
"答案", "结果", "=", "equals", "等于", "is" right after "answer"); else the whole answer when it
is one number; else the number the answer opens with ("42 (17+25)" answers 42); else, when the
answer holds exactly one number, that number. Several numbers with none marked or leading is no
answer ("I think 3 or 4" answers nothing). Numbers are read after NFKC (full-width digits), with
an optional sign, thousands commas and decimals; "3/4" reads as 0.75; a trailing % is ignored.
Pass rule: |answer − reference| ≤ REL_TOL × max(1, |reference|). Strict format: the number alone.
"""

from __future__ import annotations

import re

from edgepick.evaluate.scorers import ItemScore
from edgepick.evaluate.text import nfkc

REL_TOL = 1e-6
_NUM = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+(?:\.\d+)?)?")
_MARKER = re.compile(r"(?:final\s+answer|answer|答案|结果|得数|equals|等于|=|＝)\s*"
                     r"(?:is|was|:|：|是|为|=)?", re.I)
_LEADING = re.compile(r"\s*(?:\$|\*\*)?\s*([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?)"
                      r"(?![\d.,/]*\s*[-+*×x÷/^]\s*\d)")


def _value(s: str) -> float | None:
    s = s.replace(",", "")
    if "/" in s:
        num, den = s.split("/")
        return float(num) / float(den) if float(den) else None
    return float(s)


def _clean(text: str) -> str:
    return nfkc(str(text)).replace("−", "-")


def parse_number(text: str) -> float | None:
    """The number a reference (or any text holding one number) states: the last one in it."""
    found = _NUM.findall(_clean(text))
    return _value(found[-1]) if found else None


def answer_number(text: str) -> tuple[float | None, str]:
    """(the answer's number, how it was found: marker | whole | leading | only | ambiguous | none)."""
    t = _clean(text)
    markers = list(_MARKER.finditer(t))
    for m in reversed(markers):
        after = _NUM.search(t, m.end())
        if after and not t[m.end():after.start()].strip(" \t*$:：").count("\n"):
            return _value(after.group()), "marker"
    found = _NUM.findall(t)
    stripped = t.strip().rstrip("%。.").strip()
    if len(found) == 1 and found[0] == stripped:
        return _value(found[0]), "whole"
    lead = _LEADING.match(t)
    if lead and len(found) > 1:
        return _value(lead.group(1)), "leading"
    if len(found) == 1:
        return _value(found[0]), "only"
    return None, "ambiguous" if found else "none"


def numbers_match(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(b))


class NumericScorer:
    name = "numeric"
    pass_rule = "the answer's number (marked, whole, leading or only) equals the reference number"

    def score(self, item, output: str) -> ItemScore:
        gold = parse_number(item.reference)
        got, how = answer_number(output)
        ok = got is not None and gold is not None and numbers_match(got, gold)
        if ok:
            why = ""
        elif got is None:
            why = ("several numbers and none marked as the answer" if how == "ambiguous"
                   else "no number in the answer")
        else:
            why = f"got {got:g}, expected {gold:g}"
        return ItemScore(score=float(ok), correct=ok, format_ok=got is not None, why=why,
                         details={"pred": got, "gold": gold, "found": how},
                         strict_format=how == "whole",
                         format_error=None if got is not None else "no_answer")

    def aggregate(self, items: list, scores: list[ItemScore]) -> dict[str, float]:
        n = max(1, len(scores))
        return {"numeric_match": sum(s.correct for s in scores) / n,
                "number_found": sum(s.details["pred"] is not None for s in scores) / n}
