"""The canary's own quality probe, for a server whose traffic is not scored (no `--sample-rate`,
no feedback): a few stored eval items (the deploy's, sent with the activation) are answered by
the previous version just before the switch and by the new one just after, greedily, through the
serving pool itself (not counted as traffic), and each answer is judged as serve's sampling
judges a live one (evaluate/unacceptable.py: empty, no answer in the task's form, repetition
loop, wrong language, a critical item wrong). A version that garbles its answers fails most of
them where the previous one failed few, and the canary rolls it back."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from edgepick.errors import EdgepickError
from edgepick.evaluate.items import EvalItem
from edgepick.evaluate.scorers import get_scorer
from edgepick.evaluate.unacceptable import reasons

log = logging.getLogger("edgepick.registry")
ANSWER_TIMEOUT_S = 60.0


@dataclass
class ProbeResult:
    version: str
    bad: int = 0
    answered: int = 0
    examples: list[str] = field(default_factory=list)  # the first unacceptable answers, quoted
    # per item, in the order asked: its id, the scorer's score (0 for an unacceptable answer)
    # and the answer, quoted; both halves of a probe ask the same items, so they pair up
    scores: list[tuple[str, float, str]] = field(default_factory=list)

    def summary(self) -> str:
        return f"{self.bad}/{self.answered} unacceptable"


def items_of(body: dict) -> list[EvalItem]:
    """The probe items an activation carries (`probe_items`: eval items as JSON objects)."""
    out = []
    for n, raw in enumerate(body.get("probe_items") or []):
        try:
            item = EvalItem.model_validate(raw)
        except ValueError as exc:
            first = str(exc).splitlines()[1:2] or [""]
            raise EdgepickError(f"probe_items[{n}] is not an eval item: {first[0]}") from None
        if not item.tools:
            out.append(item)
    return out


def _text(served: Any) -> tuple[str, str]:
    body = getattr(served, "body", None) or {}
    choice = (body.get("choices") or [{}])[0]
    return (choice.get("message") or {}).get("content") or "", choice.get("finish_reason") or ""


async def probe(pool: Any, version: str, items: list[EvalItem], max_tokens: int) -> ProbeResult:
    """Each item answered once by what `pool` serves now; an engine error counts as bad."""
    result = ProbeResult(version)
    for item in items:
        body = {"messages": item.chat_messages(), "max_tokens": max_tokens, "temperature": 0,
                "stream": False}
        try:
            served = await pool.forward("chat", body, False, time.monotonic() + ANSWER_TIMEOUT_S)
            text, finish = _text(served)
        except Exception as exc:  # noqa: BLE001  a failed answer is a bad answer, not a crash
            log.info("canary probe: %s failed on %s: %s", version, item.id, exc)
            text, finish = "", "error"
        scored = get_scorer(item.task).score(item, text)
        why = reasons(item, text, finish, scored)
        result.answered += 1
        result.scores.append((item.id, 0.0 if why else float(scored.score), repr(text[:40])))
        if why:
            result.bad += 1
            if len(result.examples) < 3:
                result.examples.append(f"{item.id}: {text[:40]!r} ({', '.join(why)})")
    return result
