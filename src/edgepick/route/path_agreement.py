"""Edge/cloud consistency (seed 003 §8.3): do the two paths answer in the same form, so a user
switched from one to the other is not surprised? Per task: the same label, the same JSON keys
with the same value types, the same number; for free text, the same shape (both answered, same
script, both JSON or neither). Above 5% disagreement the seed says to fix prompts or data.
"""

from __future__ import annotations

from pydantic import BaseModel

from edgepick.evaluate.intervals import wilson
from edgepick.evaluate.scorers.extraction import find_json_object, flatten
from edgepick.evaluate.scorers.labels import find_label, yes_no_label
from edgepick.evaluate.scorers.numeric import parse_number
from edgepick.evaluate.text import has_cjk

ALERT_ABOVE = 0.05  # seed 003 §8.3: 格式不一致率超过 5%


class ItemConsistency(BaseModel):
    item_id: str
    task: str
    check: str  # label | json_shape | number | shape
    same: bool
    edge: str  # what was compared, as a short string
    cloud: str


class ConsistencyReport(BaseModel):
    n: int
    disagreements: int
    rate: float
    ci95: list[float]
    alert: bool  # the disagreement rate is above 5%
    verdict: str  # "above 5%" | "within 5%" | "undetermined" (the interval straddles 5%)
    per_task: dict[str, list[int]]  # task -> [disagreements, n]
    items: list[ItemConsistency]


def _json_shape(obj) -> str:
    kinds = {bool: "bool", int: "number", float: "number", str: "string", type(None): "null"}
    return ",".join(f"{k}:{kinds.get(type(v), 'list')}" for k, v in sorted(flatten(obj).items()))


def _key(item, text: str) -> tuple[str, str]:
    """(the check, what this answer says under it)."""
    task = item.task
    if task in ("classification", "yes_no"):
        label = yes_no_label(text) if task == "yes_no" else \
            find_label(text, {lb: [lb] for lb in item.labels or []})
        return "label", str(label)
    if task == "extraction":
        obj, _ = find_json_object(text)
        return "json_shape", "no JSON" if obj is None else _json_shape(obj)
    if task == "math":
        num = parse_number(text)
        return "number", "none" if num is None else f"{num:.6g}"

    stripped = text.strip()
    shape = ["empty" if not stripped else "text", "cjk" if has_cjk(stripped) else "latin",
             "json" if stripped and find_json_object(stripped)[0] is not None else "plain"]
    return "shape", "/".join(shape)


def consistency(items: list, edge: list[str], cloud: list[str]) -> ConsistencyReport:
    rows = []
    per_task: dict[str, list[int]] = {}
    for it, e, c in zip(items, edge, cloud):
        check, ke = _key(it, e)
        _, kc = _key(it, c)
        same = ke == kc
        rows.append(ItemConsistency(item_id=it.id, task=it.task, check=check, same=same,
                                    edge=ke[:80], cloud=kc[:80]))
        t = per_task.setdefault(it.task, [0, 0])
        t[0] += not same
        t[1] += 1
    n = len(rows)
    k = sum(not r.same for r in rows)
    lo, hi = wilson(k, n)
    rate = k / n if n else 0.0
    verdict = "above 5%" if lo > ALERT_ABOVE else "within 5%" if hi <= ALERT_ABOVE \
        else "undetermined"
    return ConsistencyReport(n=n, disagreements=k, rate=rate, ci95=[lo, hi],
                             alert=rate > ALERT_ABOVE, verdict=verdict, per_task=per_task,
                             items=rows)
