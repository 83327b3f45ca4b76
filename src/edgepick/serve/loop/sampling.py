"""Opt-in traffic sampling: a share of live requests is judged (unacceptable, format error) and,
when asked, written as eval JSONL so the next selection runs on real traffic (seed 000 §7.4).

What can be judged without a reference is judged at once: empty output, repetition loop, wrong
language, and the form (JSON; cut by max_tokens before a parseable answer) when the client asked
for JSON (`response_format`) or named the task `extraction` in `x-edgepick-task`. With a cloud
configured, the cloud answers the same input off the request's path (serve/loop/references.py) and
its answer becomes the item's reference; without one the item keeps `reference: null`.

Each item is `traffic-<request id>`, so a "down" from `POST /v1/feedback` marks it a badcase.
An opt-in redaction (regexes in the policy file's `sampling.redact`) runs before anything is
written or sent for a reference.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from edgepick.evaluate.items import TASKS, EvalItem
from edgepick.evaluate.scorers import ItemScore
from edgepick.evaluate.unacceptable import reasons
from edgepick.serve.loop.sample_file import SampleFile

REMEMBERED = 100_000  # request ids kept for feedback (the newest)


class RedactRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str
    replace: str = "[redacted]"

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return v


class ReferencePolicy(BaseModel):
    """Caps on the cloud answers asked for sampled items (within a rate and cost)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True  # with a cloud configured; false: items keep reference null
    max_per_minute: float = Field(30.0, gt=0)
    max_tokens_per_hour: int = Field(200_000, gt=0)  # billed tokens, prompt + completion
    price_per_1k_tokens: float | None = Field(None, ge=0)
    max_cost_per_hour: float | None = Field(None, ge=0)  # with price_per_1k_tokens
    max_tokens: int = Field(512, ge=1)  # the cloud's answer length
    timeout_s: float = Field(60.0, gt=0)
    queue: int = Field(64, ge=1)  # sampled items waiting for a reference; beyond: dropped


class SamplingPolicy(BaseModel):
    """The policy file's `sampling:` section."""

    model_config = ConfigDict(extra="forbid")
    seed: int | None = None  # which requests are sampled, reproducibly
    redact: list[RedactRule] = Field(default_factory=list)
    edge_only_tasks: list[str] = Field(default_factory=list)  # besides deploy.yaml's own
    references: ReferencePolicy = Field(default_factory=ReferencePolicy)


class Redactor:
    def __init__(self, rules: list[RedactRule]) -> None:
        self.rules = [(re.compile(r.pattern), r.replace) for r in rules]

    def text(self, s: str) -> str:
        for rx, rep in self.rules:
            s = rx.sub(rep, s)
        return s

    def value(self, v: Any) -> Any:
        if not self.rules:
            return v
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        return v


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


def traffic_item(kind: str, body: dict, task: str, item_id: str) -> EvalItem:
    """The request as an eval item; its reference comes from the cloud or stays null."""
    fields: dict = {"id": item_id, "task": task, "reference": None}
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
        return EvalItem.model_validate({"id": item_id, "task": "generation",
                                        "reference": None, "prompt": json.dumps(body)[:4000]})


class Sampler:
    """Judges `rate` of requests; appends them to `out` (eval JSONL) when a path is given."""

    def __init__(self, rate: float, out: Path | None, seed: int | None = None, *,
                 metrics: Any = None, policy: SamplingPolicy | None = None,
                 edge_only_tasks: list[str] | None = None) -> None:
        self.rate = rate
        self.policy = policy or SamplingPolicy()
        self.file = SampleFile(Path(out)) if out else None
        self.metrics = metrics
        self.redactor = Redactor(self.policy.redact)
        self.edge_only = set(edge_only_tasks or []) | set(self.policy.edge_only_tasks)
        self.references = None  # serve/loop/references.py's ReferenceTaker, when a cloud is set
        self._rng = random.Random(seed if seed is not None else self.policy.seed)
        self._lock = threading.Lock()
        self._n = 0
        # request id -> [item id, task, already a badcase]
        self._items: OrderedDict[str, list] = OrderedDict()

    @property
    def out(self) -> Path | None:
        return self.file.path if self.file else None

    def take(self) -> bool:
        return self.rate > 0 and self._rng.random() < self.rate

    def record(self, kind: str, body: dict, output: str, finish_reason: str,
               task_header: str | None, version: str,
               request_id: str | None = None) -> tuple[list[str], bool]:
        task = task_header if task_header in TASKS else "generation"
        rf = body.get("response_format")
        wants_json = isinstance(rf, dict) and rf.get("type") in ("json_object", "json_schema")
        with self._lock:
            self._n += 1
            item_id = f"traffic-{request_id}" if request_id else \
                f"traffic-{int(time.time())}-{self._n}"
        safe_body = self.redactor.value(body)
        item = traffic_item(kind, safe_body, task, item_id)
        why, format_error = judge(item, output, finish_reason, wants_json)
        self._count(item.task, why, format_error)
        if request_id:
            with self._lock:
                self._items[request_id] = [item.id, item.task, bool(why)]
                while len(self._items) > REMEMBERED:
                    self._items.popitem(last=False)
        pending = False
        if self.references is not None and self.file is not None:
            pending = self.references.submit(item, kind, safe_body,
                                             edge_only=item.task in self.edge_only)
        if self.file is not None:
            row = item.model_dump(mode="json", by_alias=True, exclude_none=True,
                                  exclude_defaults=True)
            row["reference"] = None
            if why:
                row["tags"] = ["badcase"]
            row["meta"] = {"output": self.redactor.text(output), "finish_reason": finish_reason,
                           "model_version": version, "unacceptable": why,
                           "format_error": format_error, "request_id": request_id,
                           "reference_pending": pending,
                           "sampled_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            if pending:
                self.file.hold(row)
            else:
                self.file.append(row)
        return why, format_error

    def _count(self, task: str, why: list[str], format_error: bool) -> None:
        m = self.metrics
        if m is None:
            return
        m.sampled_by_task.labels(task, "unacceptable" if why else "ok").inc()
        if format_error:
            m.sampled_task_format_errors.labels(task).inc()
        if why:
            m.badcases.labels(task, "judged").inc()

    def set_reference(self, item_id: str, reference: Any, source: str,
                      error: str | None = None) -> bool:
        """The cloud's answer (or why there is none) written into the sampled item."""
        if self.file is None:
            return False

        def change(row: dict) -> None:
            meta = row.setdefault("meta", {})
            meta["reference_pending"] = False
            if reference is not None:
                row["reference"] = reference
                meta["reference_source"] = source
            if error:
                meta["reference_error"] = error
        found = self.file.update(item_id, change)
        self.file.release(item_id)
        return found

    def feedback(self, request_id: str, rating: str, reason: str | None) -> bool:
        """Feedback on a sampled request goes into its item; "down" makes it a badcase for the
        next round. False when the request was not sampled (or is too old to be found)."""
        with self._lock:
            found = self._items.get(request_id)
            if found is None:
                return False
            item_id, task, was_bad = found
            if rating == "down":
                found[2] = True
        reason = self.redactor.text(reason) if reason else reason
        if rating == "down" and not was_bad and self.metrics is not None:
            self.metrics.badcases.labels(task, "feedback").inc()  # one badcase per item
        if self.file is None:
            return True

        def change(row: dict) -> None:
            meta = row.setdefault("meta", {})
            meta["feedback"] = {"rating": rating, "reason": reason}
            if rating == "down" and "badcase" not in row.get("tags", []):
                row["tags"] = [*row.get("tags", []), "badcase"]
        self.file.update(item_id, change)
        return True
