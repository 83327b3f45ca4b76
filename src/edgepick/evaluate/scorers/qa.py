"""Short-answer QA (and the last turn of multi_turn): exact match and token F1.

Both compare after normalisation (NFKC, case folding, punctuation removed, English articles
dropped) against each accepted reference, keeping the best. Tokens are words for Latin text and
single characters for Chinese, so Chinese F1 is character-level. An item passes when it is an
exact match, its token F1 is at least PASS_F1, or it contains an accepted reference as a
contiguous run of tokens ("The capital of France is Paris." passes for "Paris"; its F1 of 0.33
still lowers the score).
"""

from __future__ import annotations

from collections import Counter

from edgepick.evaluate.scorers import ItemScore, mean_of, register_scorer
from edgepick.evaluate.text import tokens

PASS_F1 = 0.5


def token_f1(pred: str, ref: str) -> float:
    p, r = tokens(pred, drop_articles=True), tokens(ref, drop_articles=True)
    if not p or not r:
        return float(p == r)
    common = sum((Counter(p) & Counter(r)).values())
    if not common:
        return 0.0
    prec, rec = common / len(p), common / len(r)
    return 2 * prec * rec / (prec + rec)


def exact_match(pred: str, ref: str) -> bool:
    p = tokens(pred, drop_articles=True)
    return bool(p) and p == tokens(ref, drop_articles=True)


def contains(pred: str, ref: str) -> bool:
    """The reference's tokens appear as one contiguous run in the answer."""
    p, r = tokens(pred, drop_articles=True), tokens(ref, drop_articles=True)
    return bool(r) and any(p[i:i + len(r)] == r for i in range(len(p) - len(r) + 1))


def references(item) -> list[str]:
    return item.reference if isinstance(item.reference, list) else [item.reference]


@register_scorer("qa", "multi_turn")
class QAScorer:
    name = "qa"

    def score(self, item, output: str) -> ItemScore:
        refs = references(item)
        em = any(exact_match(output, r) for r in refs)
        f1 = max(token_f1(output, r) for r in refs)
        has = any(contains(output, r) for r in refs)
        ok = em or f1 >= PASS_F1 or has
        why = "" if ok else f"token F1 {f1:.2f} < {PASS_F1} and the answer does not contain the reference"
        return ItemScore(score=f1, correct=ok, format_ok=bool(output.strip()), why=why,
                         details={"exact_match": em, "token_f1": f1, "contains": has})

    def aggregate(self, items: list, scores: list[ItemScore]) -> dict[str, float]:
        return {"exact_match": mean_of(scores, "exact_match"), "token_f1": mean_of(scores, "token_f1"),
                "contains": mean_of(scores, "contains")}
