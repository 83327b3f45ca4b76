"""Code: exact match after whitespace normalisation, and token F1 over code tokens.

The answer's code is the body of its first ``` fence, else the whole answer. Code is never
executed. An item passes on an exact match or a code-token F1 of at least PASS_F1.
"""

from __future__ import annotations

import re
from collections import Counter

from edgepick.evaluate.scorers import ItemScore, mean_of
from edgepick.evaluate.text import strip_fences

PASS_F1 = 0.8
_CODE_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|\S")


def code_tokens(text: str) -> list[str]:
    return _CODE_TOKEN.findall(strip_fences(text))


def code_f1(pred: str, ref: str) -> float:
    p, r = code_tokens(pred), code_tokens(ref)
    common = sum((Counter(p) & Counter(r)).values())
    if not common:
        return 0.0
    prec, rec = common / len(p), common / len(r)
    return 2 * prec * rec / (prec + rec)


class CodeScorer:
    name = "code"
    pass_rule = f"exact match after whitespace normalisation, or code-token F1 ≥ {PASS_F1}"

    def score(self, item, output: str) -> ItemScore:
        em = code_tokens(output) == code_tokens(item.reference) and bool(code_tokens(output))
        f1 = 1.0 if em else code_f1(output, item.reference)
        ok = em or f1 >= PASS_F1
        return ItemScore(score=f1, correct=ok, format_ok=bool(output.strip()),
                         why="" if ok else f"code-token F1 {f1:.2f} < {PASS_F1}",
                         details={"exact_match": em, "code_f1": f1})

    def aggregate(self, items: list, scores: list[ItemScore]) -> dict[str, float]:
        return {"exact_match": mean_of(scores, "exact_match"), "code_f1": mean_of(scores, "code_f1")}
