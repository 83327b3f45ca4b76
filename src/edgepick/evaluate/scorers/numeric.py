"""Arithmetic: the answer's number against the reference number.

The answer's number is the whole answer when it is one number, else the LAST number in it
(models that explain write "17 + 25 = 42"). Numbers are read after NFKC (full-width digits),
with an optional sign, thousands commas and decimals; "3/4" reads as 0.75; a trailing % is
ignored. Match: |answer − reference| ≤ REL_TOL × max(1, |reference|).
"""

from __future__ import annotations

import re

from edgepick.evaluate.scorers import ItemScore, register_scorer
from edgepick.evaluate.text import nfkc

REL_TOL = 1e-6
_NUM = re.compile(r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+(?:\.\d+)?)?")


def parse_number(text: str) -> float | None:
    found = _NUM.findall(nfkc(str(text)).replace("−", "-"))
    if not found:
        return None
    s = found[-1].replace(",", "").replace("−", "-")
    if "/" in s:
        num, den = s.split("/")
        return float(num) / float(den) if float(den) else None
    return float(s)


def numbers_match(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(b))


@register_scorer("math")
class NumericScorer:
    name = "numeric"

    def score(self, item, output: str) -> ItemScore:
        gold = parse_number(item.reference)
        got = parse_number(output)
        ok = got is not None and gold is not None and numbers_match(got, gold)
        why = "" if ok else ("no number in the answer" if got is None else f"got {got:g}, expected {gold:g}")
        return ItemScore(score=float(ok), correct=ok, format_ok=got is not None, why=why,
                         details={"pred": got, "gold": gold})

    def aggregate(self, items: list, scores: list[ItemScore]) -> dict[str, float]:
        n = max(1, len(scores))
        return {"numeric_match": sum(s.correct for s in scores) / n,
                "number_found": sum(s.details["pred"] is not None for s in scores) / n}
