"""Label tasks (classification, yes_no): accuracy per item, macro-F1 per group.

The answer is mapped to a label by scanning the normalised answer left to right and taking the
first place where a label (or, for yes_no, one of its aliases) starts; at one place the longest
match wins, so "不是" reads as "no" rather than as "是". ASCII labels must stand as whole words
("other" does not match inside "another"); CJK labels match anywhere. For yes_no a negation
right before an alias turns it over: "not correct", "isn't true", "never" + yes read as "no",
"not false" as "yes" (Chinese negations are aliases of their own: 不对, 不正确, 并非).
Pass rule: the label found is the reference label. Strict format: the answer is the label alone.
"""

from __future__ import annotations

import re

from edgepick.evaluate.scorers import ItemScore
from edgepick.evaluate.text import nfkc, normalize

YES_NO_ALIASES = {
    "yes": ["yes", "y", "true", "correct", "right", "是", "是的", "对", "对的", "正确", "没错"],
    "no": ["no", "n", "false", "incorrect", "wrong", "否", "不", "不是", "不对", "错", "错误",
           "没有", "并非", "不正确"],
}
# English words that, one or two words before an alias, turn its meaning over ("n't" is
# expanded to "not" first).
NEGATORS = {"not", "never", "hardly", "cannot"}


def _negated(text: str, pos: int) -> bool:
    """One of the two words just before `pos` is a negator ("is not true", "not quite right")."""
    return any(w in NEGATORS for w in text[:pos].split()[-2:])


def find_label(answer: str, aliases: dict[str, list[str]], negation: bool = False) -> str | None:
    """The label whose alias starts first in the normalised answer (longest alias at a tie).
    With `negation` (two labels), a negated English alias stands for the other label."""
    text = normalize(re.sub(r"n['’]t\b", " not", nfkc(answer).casefold()))
    if not text:
        return None
    table = sorted(((normalize(a), label) for label, al in aliases.items() for a in al if normalize(a)),
                   key=lambda p: -len(p[0]))
    best: tuple[int, int, str] | None = None  # (position, -length, label)
    for alias, label in table:
        if alias.isascii():
            m = re.search(rf"(?<![a-z0-9]){re.escape(alias)}(?![a-z0-9])", text)
            pos = m.start() if m else -1
        else:
            pos = text.find(alias)
        if pos >= 0 and (best is None or (pos, -len(alias)) < best[:2]):
            best = (pos, -len(alias), label)
    if best is None:
        return None
    if negation and best[2] in aliases and _negated(text, best[0]):
        return next(lab for lab in aliases if lab != best[2])
    return best[2]


def yes_no_label(text: str) -> str | None:
    return find_label(text, YES_NO_ALIASES, negation=True)


def macro_f1(gold: list[str], pred: list[str | None]) -> float:
    """Mean over the gold label set of per-label F1; an answer with no label is a miss."""
    labels = sorted(set(gold))
    f1s = []
    for lab in labels:
        tp = sum(1 for g, p in zip(gold, pred) if g == lab and p == lab)
        fp = sum(1 for g, p in zip(gold, pred) if g != lab and p == lab)
        fn = sum(1 for g, p in zip(gold, pred) if g == lab and p != lab)
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return sum(f1s) / len(f1s) if f1s else 0.0


class LabelScorer:
    name = "labels"
    pass_rule = "the first label (or yes/no alias, negation-aware) in the answer is the reference"

    def _gold_and_aliases(self, item) -> tuple[str, dict[str, list[str]]]:
        if item.task == "yes_no":
            return yes_no_label(item.reference), YES_NO_ALIASES
        return item.reference, {lab: [lab] for lab in item.labels}

    def score(self, item, output: str) -> ItemScore:
        gold, aliases = self._gold_and_aliases(item)
        pred = find_label(output, aliases, negation=item.task == "yes_no")
        ok = pred == gold
        why = "" if ok else ("no label from the set in the answer" if pred is None
                             else f"answered '{pred}', expected '{gold}'")
        bare = normalize(output)
        strict = pred is not None and any(bare == normalize(a) for a in aliases[pred])
        return ItemScore(score=float(ok), correct=ok, format_ok=pred is not None, why=why,
                         details={"pred": pred, "gold": gold}, strict_format=strict,
                         format_error=None if pred is not None else "no_answer")

    def aggregate(self, items: list, scores: list[ItemScore]) -> dict[str, float]:
        gold = [s.details["gold"] for s in scores]
        pred = [s.details["pred"] for s in scores]
        return {"accuracy": sum(g == p for g, p in zip(gold, pred)) / max(1, len(gold)),
                "macro_f1": macro_f1(gold, pred)}
