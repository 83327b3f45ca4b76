"""The consistency test of seed 000 §5.4: do the candidate and its reference write the same
greedy answer to the same prompt, and if not, how early do they part?

Usable in a user's CI: `edgepick consistency` exits non-zero when the share of identical answers
falls below a threshold.
"""

from __future__ import annotations

import json
from pathlib import Path

from edgepick.backends import get_backend
from edgepick.errors import EdgepickError, InputError
from edgepick.evaluate.items import Message, load_eval_set
from edgepick.progress import ProgressEvent, Tick
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.fidelity import ConsistencyItem, ConsistencyResult
from edgepick.records.model_ref import ModelRef

# Fields that only matter for scoring answers: a consistency run needs prompts, not answers, so a
# line whose only problems are in these fields is still used.
ANSWER_FIELDS = {"reference", "labels", "schema"}



def load_prompts(path: str | Path) -> tuple[list[tuple[str, list[dict]]], list[str]]:
    """(id, chat messages) for every usable line of an eval JSONL, and one message per bad line."""
    items, problems = load_eval_set(path)
    prompts = [(it.id, it.chat_messages()) for it in items]
    by_line: dict[int | None, list[InputError]] = {}
    for p in problems:
        by_line.setdefault(p.line, []).append(p)
    skipped: list[str] = []
    lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    for line, errs in sorted(by_line.items(), key=lambda kv: kv[0] or 0):
        if line is not None and all((e.field or "").split(".")[0] in ANSWER_FIELDS for e in errs):
            raw = json.loads(lines[line - 1])
            try:
                if raw.get("messages") is not None:
                    msgs = [Message.model_validate(m).model_dump() for m in raw["messages"]]
                else:
                    msgs = [{"role": "user", "content": str(raw["prompt"])}]
                prompts.append((str(raw["id"]), msgs))
                continue
            except (KeyError, ValueError, TypeError):
                pass
        skipped.extend(str(e) for e in errs)
    if not prompts:
        raise InputError(path, "no usable prompts (every line had a problem: "
                         + (skipped[0] if skipped else "the file is empty") + ")")
    return prompts, skipped


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """Index of the first position where two token sequences differ (a length difference counts
    at the end of the shorter one); None when they are the same."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _run(ref: ModelRef, prompts: list[tuple[str, list[dict]]], max_tokens: int, threads: int,
         label: str, progress: Tick | None, tokenize_also: list[str] | None = None):
    backend = get_backend(ref.backend)  # the two may run on different engines
    backend.load(Candidate(ref=ref, settings=RuntimeSettings(threads=threads)))
    try:
        texts, rendered = [], []
        for i, (_, msgs) in enumerate(prompts):
            texts.append(backend.generate(msgs, max_tokens, chat=True).text)
            rendered.append(backend.render_chat(msgs))
            if progress:
                progress(ProgressEvent(i + 1, len(prompts), label))
        toks = [backend.tokenize(t, add_bos=False) for t in texts]
        other = [backend.tokenize(t, add_bos=False) for t in (tokenize_also or [])]
        # the prompt + answer as this engine reads them: compared with the other engine's IDs
        whole = [backend.tokenize(r + t, add_bos=False) for r, t in zip(rendered, texts)]
        return texts, toks, other, rendered, whole
    finally:
        backend.unload()


def check_limits(max_tokens: int, threshold: float) -> None:
    """One line for a budget or threshold out of range, before any model is loaded."""
    if max_tokens < 1:
        raise EdgepickError(f"--max-tokens must be ≥ 1 (got {max_tokens})")
    if not 0.0 <= threshold <= 1.0:
        raise EdgepickError(f"--threshold must be between 0 and 1 (got {threshold})")


def consistency(reference: ModelRef, candidate: ModelRef, data: str | Path, max_tokens: int = 64,
                threshold: float = 0.9, threads: int = 2,
                progress: Tick | None = None) -> ConsistencyResult:
    """Greedy answers of both models with each model's chat template, compared token by token.

    Both texts are tokenized by the reference's tokenizer without BOS, so `first_divergence` is
    the index of the first differing token of the answers as the reference would spell them.
    """
    check_limits(max_tokens, threshold)
    ref_path, cand_path = (r.local_path("consistency runs both models in process; give GGUF "
                                        "files") for r in (reference, candidate))
    prompts, skipped = load_prompts(data)
    # the candidate's prompt + answer, tokenized by both engines: same text, same IDs?
    cand_texts, _, _, cand_prompts, cand_own = _run(candidate, prompts, max_tokens, threads,
                                                    "candidate", progress)
    whole = [p + t for p, t in zip(cand_prompts, cand_texts)]
    ref_texts, ref_toks, other, ref_prompts, _ = _run(reference, prompts, max_tokens, threads,
                                                      "reference", progress,
                                                      tokenize_also=cand_texts + whole)
    cand_toks, ref_whole = other[:len(cand_texts)], other[len(cand_texts):]
    items = []
    for k, ((pid, _), rt, ct, rtok, ctok) in enumerate(
            zip(prompts, ref_texts, cand_texts, ref_toks, cand_toks)):
        div = None if rt == ct else first_divergence(rtok, ctok)
        if rt != ct and div is None:
            div = 0  # same tokens, different text: cannot happen with one tokenizer; be safe
        items.append(ConsistencyItem(id=pid, identical=rt == ct, first_divergence=div,
                                     ref_tokens=len(rtok), cand_tokens=len(ctok),
                                     ref_text=rt, cand_text=ct,
                                     token_divergence=first_divergence(cand_own[k], ref_whole[k]),
                                     same_prompt_text=cand_prompts[k] == ref_prompts[k]))
    n_same = sum(it.identical for it in items)
    divs = [it.first_divergence for it in items if it.first_divergence is not None]
    share = n_same / len(items)
    return ConsistencyResult(
        reference=ref_path, candidate=cand_path, data=str(data), max_tokens=max_tokens,
        threshold=threshold, n=len(items), n_identical=n_same, identical_share=share,
        mean_first_divergence=sum(divs) / len(divs) if divs else None,
        passed=share >= threshold, items=items, skipped=skipped,
        engines=[reference.backend, candidate.backend],
        n_same_tokens=sum(it.token_divergence is None for it in items))
