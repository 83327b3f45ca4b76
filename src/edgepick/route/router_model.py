"""A router model: a small model reads the request and names its task type, so a deploy can
route by task before any tier answers (seed 003 §5.2: a small model in front that decides who
handles a request). Its accuracy is measured on the eval set's own items, whose task types are
known: each item becomes a classification item over the set's task types, answered and scored
by the evaluate stage's classification scorer, and stored and reused like any eval output.
"""

from __future__ import annotations

from pydantic import BaseModel

from edgepick.evaluate.eval_result import score_outputs
from edgepick.evaluate.items import EvalItem
from edgepick.stats import wilson

SYSTEM = "You sort requests by kind. You never answer them."
# the request quoted first and the question last, where a small model still follows it
ASK = ("Request:\n<<<\n{request}\n>>>\n\nWhich kind of request is this: {labels}? "
       "Reply with one of these words only.")


class RouterModelResult(BaseModel):
    model: str
    n: int
    correct: int
    accuracy: float
    ci95: list[float]  # Wilson
    per_task: dict[str, list[int]]  # task -> [correct, n]
    # what always naming the commonest task scores: a router below it has learned nothing
    majority_task: str
    majority: float


def _request_text(item: EvalItem) -> str:
    """What the router sees: the request as the user sent it, the item's system prompt
    included (a deployed router sees that too)."""
    return "\n".join(f"{m['role']}: {m['content']}" for m in item.chat_messages())


def router_items(items: list[EvalItem]) -> list[EvalItem]:
    """Each item as a question to the router: its reference is its own task type."""
    labels = sorted({it.task for it in items})
    return [EvalItem(id=f"router:{it.id}", task="classification", reference=it.task,
                     labels=labels, max_tokens=8,
                     messages=[{"role": "system", "content": SYSTEM},
                               {"role": "user", "content": ASK.format(
                                   request=_request_text(it), labels=", ".join(labels))}])
            for it in items]


def accuracy(model: str, items: list[EvalItem], outputs: list[dict]) -> RouterModelResult:
    asked = router_items(items)
    outcomes, _ = score_outputs(asked, outputs)
    per: dict[str, list[int]] = {}
    for it, o in zip(items, outcomes):
        cell = per.setdefault(it.task, [0, 0])
        cell[0] += int(o.correct)
        cell[1] += 1
    right = sum(c for c, _ in per.values())
    lo, hi = wilson(right, len(items))
    common = max(sorted(per), key=lambda t: per[t][1])
    return RouterModelResult(model=model, n=len(items), correct=right,
                             accuracy=right / len(items) if items else 0.0, ci95=[lo, hi],
                             per_task=dict(sorted(per.items())), majority_task=common,
                             majority=per[common][1] / len(items))
