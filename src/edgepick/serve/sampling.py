"""Opt-in traffic sampling: a share of live requests is judged (unacceptable, format error) and,
when asked, written as eval JSONL so the next selection runs on real traffic (seed 000 §7.4).

No reference answer exists for live traffic, so only what can be judged without one is judged:
empty output, repetition loop, generation cut by max_tokens, and the form (JSON) when the client
asked for JSON (`response_format`) or named a format task in `x-edgepick-task`.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

from edgepick.evaluate.dataset import TASKS
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


def judge(task: str, output: str, finish_reason: str, wants_json: bool) -> tuple[list[str], bool]:
    """Unacceptable reasons and whether the form was wrong, for one live output."""
    # without labels or a reference, only the JSON form can be judged; other tasks as free text
    checked = "extraction" if wants_json or task == "extraction" else "generation"
    format_ok = _json_ok(output) if checked == "extraction" else True
    why = reasons(checked, output, finish_reason, format_ok, True, False)
    return why, not format_ok


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
        fmt = (body.get("response_format") or {}).get("type") if isinstance(
            body.get("response_format"), dict) else None
        why, format_error = judge(task, output, finish_reason, fmt in ("json_object", "json_schema"))
        if self.out is not None:
            with self._lock:
                self._n += 1
                item = {"id": f"traffic-{int(time.time())}-{self._n}", "task": task,
                        "reference": None,
                        "meta": {"output": output, "finish_reason": finish_reason,
                                 "model_version": version, "unacceptable": why,
                                 "sampled_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}
                if kind == "chat":
                    item["messages"] = [{"role": m.get("role"), "content": m.get("content")}
                                        for m in body.get("messages", []) if isinstance(m, dict)
                                        and isinstance(m.get("content"), str)
                                        and m.get("role") in ("system", "user", "assistant")]
                else:
                    item["prompt"] = body.get("prompt") if isinstance(body.get("prompt"), str) \
                        else json.dumps(body.get("prompt"))
                self.out.parent.mkdir(parents=True, exist_ok=True)
                with open(self.out, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(item, ensure_ascii=False) + "\n")
        return why, format_error
