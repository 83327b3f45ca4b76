"""Summaries and free generation: ROUGE-L F1 (LCS-based, beta = 1) against the reference.

Tokens as in QA (words for Latin text, single characters for Chinese), no article removal. An
item passes when its ROUGE-L F1 is at least PASS_ROUGE_L (pass rule). Free text: no strict form.
"""

from __future__ import annotations

from edgepick.evaluate.scorers import ItemScore, mean_of
from edgepick.evaluate.text import tokens

PASS_ROUGE_L = 0.3


def lcs_len(a: list[str], b: list[str]) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(pred: str, ref: str) -> tuple[float, float, float]:
    """(precision, recall, F1)."""
    p, r = tokens(pred), tokens(ref)
    if not p or not r:
        return 0.0, 0.0, 0.0
    lcs = lcs_len(p, r)
    if not lcs:
        return 0.0, 0.0, 0.0
    prec, rec = lcs / len(p), lcs / len(r)
    return prec, rec, 2 * prec * rec / (prec + rec)


class SummaryScorer:
    name = "rouge_l"
    pass_rule = f"ROUGE-L F1 against the reference ≥ {PASS_ROUGE_L}"

    def score(self, item, output: str) -> ItemScore:
        prec, rec, f1 = rouge_l(output, item.reference)
        ok = f1 >= PASS_ROUGE_L
        return ItemScore(score=f1, correct=ok, format_ok=bool(output.strip()),
                         why="" if ok else f"ROUGE-L {f1:.2f} < {PASS_ROUGE_L}",
                         details={"rouge_l_p": prec, "rouge_l_r": rec, "rouge_l": f1})

    def aggregate(self, items: list, scores: list[ItemScore]) -> dict[str, float]:
        return {k: mean_of(scores, k) for k in ("rouge_l", "rouge_l_p", "rouge_l_r")}
