"""Opt-in traffic sampling: a share of live requests is judged (unacceptable, format error) and,
when asked, written as eval JSONL so the next selection runs on real traffic (seed 000 §7.4).

No reference answer exists for live traffic, so only what can be judged without one is judged:
empty output, repetition loop, wrong language, and the form (JSON; cut by max_tokens before a
parseable answer) when the client asked for JSON (`response_format`) or named the task
`extraction` in `x-edgepick-task`.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

from edgepick.evaluate.items import TASKS, EvalItem
from edgepick.evaluate.scorers import ItemScore
from edgepick.evaluate.unacceptable import reasons


def _json_ok(text: str) -> bool:
    t = text.strip()
    if t.startswith("```"):
        t = t.strip("`")
        t = t[t.find("\n") + 1:] if "\n" in t else t
    try:
        json.loads(t)
        return True
    except ValueError:
        return False


def judge(item: EvalItem, output: str, finish_reason: str,
          wants_json: bool) -> tuple[list[str], bool]:
    """Unacceptable reasons and whether the form was wrong, for one live output."""
    # without labels or a reference, only the JSON form can be judged
    json_form = wants_json or item.task == "extraction"
    fmt_error = "invalid_json" if json_form and not _json_ok(output) else None
    score = ItemScore(score=1.0, correct=True, format_ok=fmt_error is None,
                      format_error=fmt_error)
    return reasons(item, output, finish_reason, score), fmt_error is not None


def traffic_item(kind: str, body: dict, task: str, n: int) -> EvalItem:
    """The request as an eval item whose reference is left for a person to fill in."""
    fields: dict = {"id": f"traffic-{int(time.time())}-{n}", "task": task, "reference": None}
    if kind == "chat":
        fields["messages"] = [{"role": m.get("role"), "content": m.get("content")}
                              for m in body.get("messages", []) if isinstance(m, dict)
                              and isinstance(m.get("content"), str)
                              and m.get("role") in ("system", "user", "assistant")]
    else:
        prompt = body.get("prompt")
        fields["prompt"] = prompt if isinstance(prompt, str) else json.dumps(prompt)
    try:
        return EvalItem.model_validate(fields)
    except ValueError:  # an odd request still gets recorded, as free text
        return EvalItem.model_validate({"id": fields["id"], "task": "generation",
                                        "reference": None, "prompt": json.dumps(body)[:4000]})


class Sampler:
    """Judges `rate` of requests; appends them to `out` (eval JSONL) when a path is given."""

    def __init__(self, rate: float, out: Path | None, seed: int | None = None) -> None:
        self.rate = rate
        self.out = Path(out) if out else None
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._n = 0

    def take(self) -> bool:
        return self.rate > 0 and self._rng.random() < self.rate

    def record(self, kind: str, body: dict, output: str, finish_reason: str,
               task_header: str | None, version: str) -> tuple[list[str], bool]:
        task = task_header if task_header in TASKS else "generation"
        rf = body.get("response_format")
        wants_json = isinstance(rf, dict) and rf.get("type") in ("json_object", "json_schema")
        with self._lock:
            self._n += 1
            item = traffic_item(kind, body, task, self._n)
        why, format_error = judge(item, output, finish_reason, wants_json)
        if self.out is not None:
            row = item.model_dump(mode="json", by_alias=True, exclude_none=True,
                                  exclude_defaults=True)
            row["reference"] = None
            row["meta"] = {"output": output, "finish_reason": finish_reason,
                           "model_version": version, "unacceptable": why,
                           "sampled_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            with self._lock:
                self.out.parent.mkdir(parents=True, exist_ok=True)
                with open(self.out, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        return why, format_error
