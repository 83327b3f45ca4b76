"""Raw outputs: each item through one model, stored so re-scoring never re-runs inference.

An output is keyed by the candidate's content key (model bytes, backend, runtime settings), the
item's input hash and the generation settings; the model is loaded once per run and only when at
least one of its outputs is missing, so an interrupted eval resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from typing import Callable

from edgepick.errors import EdgepickError
from edgepick.evaluate.items import EvalItem
from edgepick.records.candidate import Candidate
from edgepick.store.results import ResultStore

OUTPUT_KIND = "eval_output"

# Budgets large enough to finish the answer with a sentence around it (a label in a sentence,
# a worked sum ending in its result, a JSON object in a fence): hitting the budget before a
# parseable answer is unacceptable ("truncated"), so a budget must never be what breaks an
# answer. Override per item (`max_tokens`) or per plan (`eval.max_tokens`). docs/evaluate.md.
DEFAULT_MAX_TOKENS = {
    "classification": 32, "yes_no": 32, "math": 96, "qa": 48, "extraction": 160,
    "summary": 128, "multi_turn": 128, "generation": 256, "code": 320, "tool_call": 96,
}


def budget(item: EvalItem, budgets: dict[str, int]) -> int:
    return item.max_tokens or budgets.get(item.task, 128)


def output_key(candidate_key: str, item: EvalItem, max_tokens: int, seed: int) -> str:
    gen = {"max_tokens": max_tokens, "chat": True, "sampling": "greedy", "seed": seed}
    blob = json.dumps([candidate_key, item.input_hash(), gen], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def collect_outputs(candidate: Candidate, items: list[EvalItem], store: ResultStore,
                    budgets: dict[str, int],
                    on_start: Callable[[str, int], None] | None = None,
                    on_item: Callable[[], None] | None = None) -> tuple[list[dict], int, int]:
    """(one output dict per item, how many were generated now, how many came from the store)."""
    from edgepick.backends import get_backend

    ckey = candidate.content_key()
    keys = [output_key(ckey, it, budget(it, budgets), candidate.settings.seed) for it in items]
    outputs: list[dict | None] = [None] * len(items)
    for i, k in enumerate(keys):
        got = store.get(OUTPUT_KIND, k)
        if got is not None:
            outputs[i] = dict(got, reused=True)
    missing = [i for i, o in enumerate(outputs) if o is None]
    if on_start:
        on_start(candidate.name, len(missing))
    if missing:
        backend = get_backend(candidate.backend)
        prompter = None
        if any(items[i].tools for i in missing):  # seed 004 §4.1: tools in the model's own format
            from edgepick.agent.prompting import ToolPrompter

            prompter = ToolPrompter.for_model(candidate.model, candidate.backend)
        backend.load(candidate)
        try:
            for i in missing:
                it = items[i]
                prompt, chat = (prompter.build(it.chat_messages(), it.tools)
                                if prompter and it.tools else (it.chat_messages(), True))
                try:
                    g = backend.generate(prompt, budget(it, budgets), chat=chat)
                except EdgepickError as exc:
                    # Not stored: a transient failure must be retried by the next run.
                    outputs[i] = {"text": "", "finish_reason": "error", "generated_tokens": 0,
                                  "error": str(exc), "reused": False}
                else:
                    rec = {"text": g.text, "finish_reason": g.finish_reason,
                           "generated_tokens": g.generated_tokens, "prompt_tokens": g.prompt_tokens,
                           "item_id": it.id}
                    if prompter and it.tools:
                        rec["tool_prompt"] = prompter.mode
                    store.put(OUTPUT_KIND, keys[i], rec, label=f"{candidate.name}:{it.id}")
                    outputs[i] = dict(rec, reused=False)
                if on_item:
                    on_item()
        finally:
            backend.unload()
    generated = len(missing)
    return [o for o in outputs if o is not None], generated, len(items) - generated
