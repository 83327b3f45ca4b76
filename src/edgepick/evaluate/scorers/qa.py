"""Short-answer QA (and the last turn of multi_turn): exact match and token F1.

Both compare after normalisation (NFKC, case folding, punctuation removed, English articles
dropped) against each accepted reference, keeping the best. Tokens are words for Latin text and
single characters for Chinese, so Chinese F1 is character-level.

The answer is the first non-empty line, without a leading "Answer:" / "答案：". Pass rule: the
answer is an exact match; or it is not a list of guesses and either contains an accepted
reference as a contiguous run of tokens ("The capital of France is Paris." passes for "Paris";
its F1 of 0.33 still lowers the score) or reaches token F1 ≥ PASS_F1. A list of guesses is an
answer offering alternatives ("Paris or Lyon", "北京或上海") or an enumeration (inline, or a
bulleted / numbered list over several lines) of short
parts of which some are neither the reference nor words of the question ("Paris, Lyon, Nice"
fails; "Paris, France" for "capital of France?" passes). Strict format: the exact match alone.
"""

from __future__ import annotations

import re
from collections import Counter

from edgepick.evaluate.scorers import ItemScore, mean_of
from edgepick.evaluate.text import nfkc, tokens

PASS_F1 = 0.5
_LEAD = re.compile(r"^\s*(?:[-*•]\s*)?(?:(?:final\s+)?answer|a|答案|回答)\s*[:：]\s*", re.I)
_ALTERNATIVES = re.compile(r"\b(?:or|either)\b|或者|或是|还是|或", re.I)
_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)、])\s*(.+)$")
_SEPARATORS = re.compile(r"[,;/、，；|]|\band\b|和|与")


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


def answer_span(output: str) -> str:
    """The first non-empty line, without a leading answer marker; a bulleted or numbered list
    of two or more lines is kept whole, its items joined by ';'."""
    listed = [m.group(1) for m in map(_ITEM.match, nfkc(output).splitlines()) if m]
    if len(listed) >= 2:
        return "; ".join(listed)
    for line in nfkc(output).splitlines():
        if line.strip():
            return _LEAD.sub("", line).strip()
    return ""


def is_guess_list(answer: str, refs: list[str], question: str) -> bool:
    """Alternatives offered, or short parts that are neither a reference nor words of the question."""
    if _ALTERNATIVES.search(answer) and any(contains(answer, r) for r in refs):
        return True
    parts = [p for p in (x.strip() for x in _SEPARATORS.split(answer)) if tokens(p)]
    if len(parts) < 2:
        return False
    longest_ref = max(len(tokens(r, drop_articles=True)) for r in refs)
    if any(len(tokens(p, drop_articles=True)) > longest_ref + 1 for p in parts):
        return False  # a sentence with a clause, not an enumeration
    q = set(tokens(question, drop_articles=True))
    others = [p for p in parts if not any(contains(p, r) for r in refs)
              and not set(tokens(p, drop_articles=True)) <= q]
    return bool(others)


def references(item) -> list[str]:
    return item.reference if isinstance(item.reference, list) else [item.reference]


def question_text(item) -> str:
    return " ".join(m["content"] for m in item.chat_messages())


class QAScorer:
    name = "qa"
    pass_rule = ("exact match, or not a list of guesses and (contains the reference or "
                 f"token F1 ≥ {PASS_F1})")

    def score(self, item, output: str) -> ItemScore:
        refs = references(item)
        span = answer_span(output)
        em = any(exact_match(span, r) for r in refs)
        f1 = max(token_f1(span, r) for r in refs)
        has = any(contains(span, r) for r in refs)
        guesses = not em and is_guess_list(span, refs, question_text(item))
        ok = em or (not guesses and (has or f1 >= PASS_F1))
        if ok:
            why = ""
        elif guesses:
            why = "a list of guesses, not one answer"
        else:
            why = f"token F1 {f1:.2f} < {PASS_F1} and the answer does not contain the reference"
        return ItemScore(score=f1, correct=ok, format_ok=bool(output.strip()), why=why,
                         details={"exact_match": em, "token_f1": f1, "contains": has,
                                  "guess_list": guesses},
                         strict_format=any(exact_match(output, r) for r in refs))

    def aggregate(self, items: list, scores: list[ItemScore]) -> dict[str, float]:
        return {"exact_match": mean_of(scores, "exact_match"), "token_f1": mean_of(scores, "token_f1"),
                "contains": mean_of(scores, "contains")}
