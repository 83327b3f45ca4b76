"""Raw outputs: each item through one model, stored so re-scoring never re-runs inference.

An output is keyed by the candidate's content key (model bytes, backend, runtime settings), the
item's input hash and the generation settings; the model is loaded once per run and only when at
least one of its outputs is missing, so an interrupted eval resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from edgepick.backends import get_backend
from edgepick.backends.base import (CONCURRENT_SEQUENCES, GRAMMAR, SAMPLING, GenRequest,
                                    LoadOptions, request_options)
from edgepick.clock import now
from edgepick.constraints import ConstraintError, check_schema
from edgepick.errors import EdgepickError
from edgepick.evaluate.items import EvalItem
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.records.candidate import Candidate
from edgepick.store.identity import content_key
from edgepick.store.results import ResultStore
from edgepick.toolcall.prompting import ToolPrompter

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


def output_key(candidate_key: str, item: EvalItem, max_tokens: int, seed: int,
               sampling: dict | None = None) -> str:
    """Greedy outputs keep the key they always had; a sampled one adds its settings (the seed
    is the sample's own)."""
    gen = {"max_tokens": max_tokens, "chat": True, "sampling": sampling or "greedy", "seed": seed}
    blob = json.dumps([candidate_key, item.input_hash(), gen], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def sample_seeds(base: int, samples: int) -> list[int]:
    """The recorded seed of each of an item's samples: base, base + 1, ..."""
    return [base + j for j in range(samples)]


def output_keys(candidate: Candidate, items: list[EvalItem], budgets: dict[str, int],
                sampling: dict | None = None, samples: int = 1) -> list[list[str]]:
    """The keys `collect_outputs` stores each item's outputs under, one per sample."""
    ckey = content_key(candidate)
    seeds = sample_seeds(candidate.settings.seed, samples if sampling else 1)
    return [[output_key(ckey, it, budget(it, budgets), sd, sampling) for sd in seeds]
            for it in items]


def _request(backend, prompt, max_tokens: int, chat: bool, sampling: dict | None, seed: int,
             constraint: dict | None = None):
    if sampling is not None and not backend.supports(SAMPLING):
        raise EdgepickError(f"the {backend.name or type(backend).__name__} backend generates "
                            "greedily only; evaluate with sampling needs an engine that samples "
                            "(scenario sampling, docs/evaluate.md)", )
    return GenRequest(prompt=prompt, max_tokens=max_tokens, chat=chat,
                      sampling=None if sampling is None else dict(sampling, seed=seed),
                      constraint=constraint)


def item_constraint(candidate: Candidate, it: EvalItem) -> dict | None:
    """What a candidate run with `constrain: grammar` decodes item `it` under: its JSON schema,
    its label set, or yes/no (seed 000 §2.3); None for free text. A schema the engine's grammar
    could not survive is refused first, as serve refuses it (edgepick/constraints.py)."""
    if candidate.settings.constrain != "grammar":
        return None
    constraint = it.constraint()
    if constraint is not None and "json_schema" in constraint:
        try:
            check_schema(it.schema_, "schema")
        except ConstraintError as exc:
            raise EdgepickError(f"item {it.id}: its schema cannot be a grammar: {exc}") from None
    return constraint


# A constrained candidate's first constrained items are decoded a second time, free, to the same
# length: the grammar's cost in speed on the same prompts and model load (docs/evaluate.md)
TIMED_ITEMS = 8


def _free_twin(backend, req, g) -> dict | None:
    """The constrained generation's decode time beside its prompt decoded free to the same
    length, after it, alone, on the same loaded model: {tokens, s, free_tokens, free_s}."""
    if len(g.token_times) < 2:
        return None
    opts = {k: v for k, v in request_options(req).items() if k != "constraint"}
    try:
        free = backend.generate(req.prompt, g.generated_tokens, chat=req.chat, ignore_eos=True,
                                **opts)
    except (EdgepickError, TypeError):  # an engine that cannot ignore EOS: not timed
        return None
    if len(free.token_times) < 2:
        return None
    return {"tokens": len(g.token_times) - 1, "s": g.token_times[-1] - g.token_times[0],
            "free_tokens": len(free.token_times) - 1,
            "free_s": free.token_times[-1] - free.token_times[0]}


def _constraints(candidate: Candidate, items: list[EvalItem], missing: list, got: list):
    """(item index -> its constraint, the (item, sample) pairs still to generate): an item whose
    constraint is refused gets an error output (not stored) and is not generated."""
    constraints: dict[int, dict | None] = {}
    refused: dict[int, str] = {}
    for i in dict.fromkeys(i for i, _ in missing):
        try:
            constraints[i] = item_constraint(candidate, items[i])
        except EdgepickError as exc:
            refused[i] = str(exc)
    for i, j in missing:
        if i in refused:
            got[i][j] = {"text": "", "finish_reason": "error", "generated_tokens": 0,
                         "error": refused[i]}
    return constraints, [(i, j) for i, j in missing if i not in refused]


def _generate_group(backend, reqs: list, keep) -> None:
    """`keep(k, generation or the EdgepickError that stopped it)` for each request, as each
    finishes: a group that fails is tried again one by one for what it had not finished, so a
    bad item costs only its own output."""
    kept: set[int] = set()

    def done(k: int, g) -> None:
        kept.add(k)
        keep(k, g)

    if backend.supports(CONCURRENT_SEQUENCES):
        try:
            backend.generate_many(reqs, done)
            return
        except EdgepickError as exc:
            if len(reqs) == 1:
                return keep(0, exc)
    for k, r in enumerate(reqs):
        if k in kept:
            continue
        try:
            g = backend.generate(r.prompt, r.max_tokens, chat=r.chat, **request_options(r))
        except EdgepickError as exc:
            g = exc
        keep(k, g)


def collect_outputs(candidate: Candidate, items: list[EvalItem], store: ResultStore,
                    budgets: dict[str, int],
                    progress: Tick | None = None, *,
                    sampling: dict | None = None, samples: int = 1,
                    deadline: float | None = None,
                    parallel: int = 1) -> tuple[list[dict | None], int, int]:
    """(one output dict per item, how many generations ran now, how many came from the store).
    With `sampling` each item gets `samples` outputs, each stored under its own seed; the item's
    dict then holds them under "samples" (each with its "seed"), so a killed run resumes.
    With a `deadline` (on `now()`) no generation starts after it: the items it leaves
    without every output come back as None. `progress` hears this call's own count: the items
    already whole in the store first, then one more as each of the others is generated.
    `parallel`: items decoded together by an engine with CONCURRENT_SEQUENCES (each with its
    own budget, sampling and seed; the stored record is the same), in the model's one cache."""
    seeds = sample_seeds(candidate.settings.seed, samples if sampling else 1)
    keys = output_keys(candidate, items, budgets, sampling, samples)
    got: list[list[dict | None]] = [[store.get(OUTPUT_KIND, k) for k in ks] for ks in keys]
    missing = [(i, j) for i, g in enumerate(got) for j, o in enumerate(g) if o is None]
    reused = {(i, j) for i, g in enumerate(got) for j, o in enumerate(g) if o is not None}
    tick = progress or silent
    done = len(items) - len({i for i, _ in missing})
    tick(ProgressEvent(done, len(items), candidate.name))
    if missing:
        backend = get_backend(candidate.backend)
        prompter = None
        if any(items[i].tools for i, _ in missing):  # seed 004 §4.1: tools in the model's format
            prompter = ToolPrompter.for_model(candidate.model, candidate.backend)
        if candidate.settings.constrain == "grammar" and not backend.supports(GRAMMAR):
            raise EdgepickError(f"{candidate.name}: the {candidate.backend} engine cannot decode "
                                "under a grammar (constrain: grammar); use an engine with the "
                                "grammar capability")
        constraints, missing = _constraints(candidate, items, missing, got)
        # a group of items decoded together shares the one cache the model is budgeted for
        width = max(1, min(parallel, len(missing))) if backend.supports(CONCURRENT_SEQUENCES) \
            else 1
        backend.load(candidate, LoadOptions(n_seq=width, shared_kv=True) if width > 1 else None)
        left = Counter(i for i, _ in missing)  # an item is done when all its samples are
        timed = 0

        def keep(i: int, j: int, req, g) -> None:
            nonlocal done, timed
            it = items[i]
            if isinstance(g, EdgepickError):
                # Not stored: a transient failure must be retried by the next run.
                got[i][j] = {"text": "", "finish_reason": "error", "generated_tokens": 0,
                             "error": str(g)}
            else:
                rec = {"text": g.text, "finish_reason": g.finish_reason,
                       "generated_tokens": g.generated_tokens,
                       "prompt_tokens": g.prompt_tokens, "item_id": it.id}
                if sampling:
                    rec["seed"] = seeds[j]
                if prompter and it.tools:
                    rec["tool_prompt"] = prompter.mode
                speed = _free_twin(backend, req, g) \
                    if req.constraint is not None and timed < TIMED_ITEMS else None
                if speed is not None:
                    rec["decode"], timed = speed, timed + 1
                store.put(OUTPUT_KIND, keys[i][j], rec, label=f"{candidate.name}:{it.id}")
                got[i][j] = rec
            left[i] -= 1
            if not left[i]:
                done += 1
                tick(ProgressEvent(done, len(items), candidate.name))

        try:
            reqs = []
            for i, j in missing:
                it = items[i]
                prompt, chat = (prompter.build(it.chat_messages(), it.tools)
                                if prompter and it.tools else (it.chat_messages(), True))
                reqs.append(_request(backend, prompt, budget(it, budgets), chat, sampling,
                                     seeds[j], constraints.get(i)))
            # with a deadline, a group of `width` at a time: none starts after it
            step = width if deadline is not None else len(missing)
            for start in range(0, len(missing), step):
                if deadline is not None and now() >= deadline:
                    break
                pairs, group = missing[start:start + step], reqs[start:start + step]
                _generate_group(backend, group,
                                lambda k, g, pairs=pairs, group=group: keep(*pairs[k], group[k], g))
        finally:
            backend.unload()
    outputs: list[dict | None] = []
    for i, g in enumerate(got):
        if any(o is None for o in g):
            outputs.append(None)
            continue
        recs = [dict(o, reused=(i, j) in reused) for j, o in enumerate(g)]
        if sampling:
            outputs.append({"samples": [dict(r, seed=r.get("seed", seeds[j]))
                                        for j, r in enumerate(recs)],
                            "reused": all(r["reused"] for r in recs)})
        else:
            outputs.append(recs[0])
    made = sum(o is not None for g in got for o in g) - len(reused)
    return outputs, made, len(reused)
