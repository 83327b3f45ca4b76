"""`edgepick eval` end to end: outputs (stored), scores, gaps, badcases → one EvalResult."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from edgepick.clock import now
from edgepick.errors import EdgepickError, InputError
from edgepick.evaluate.gap import (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, badcase_list, gaps_by,
                                   group_gap, unacceptable_summary)
from edgepick.evaluate.items import EvalItem, task_constraints
from edgepick.evaluate.looks import run_looks
from edgepick.evaluate.outputs import DEFAULT_MAX_TOKENS, budget, collect_outputs
from edgepick.evaluate.reference_free import note as reference_free_note
from edgepick.evaluate.reference_free import stand_in
from edgepick.evaluate.scorers import ItemScore, get_scorer
from edgepick.evaluate.unacceptable import reasons
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.records.candidate import Candidate
from edgepick.records.evaluation import (BootstrapSettings, CandidateEval, EvalResult, ItemOutcome,
                                         SampleOutcome)
from edgepick.store.identity import content_key
from edgepick.store.results import ResultStore

if TYPE_CHECKING:
    from edgepick.evaluate.looks import Sequential

EVAL_KIND = "eval"
SCORER_VERSION = "3"  # bump when a scorer's rules change, so stored EvalResults are not reused


def _score_one(it: EvalItem, out: dict) -> tuple[ItemScore, list[str], str, str]:
    text = out.get("text", "")
    finish = out.get("finish_reason", "stop")
    if it.reference_free:  # the scorer judges the form only; its score means nothing here
        f = get_scorer(it.task).score(stand_in(it), text)
        s = ItemScore(score=0.0, correct=False, format_ok=f.format_ok, why="no reference",
                      strict_format=f.strict_format, format_error=f.format_error)
    else:
        s = get_scorer(it.task).score(it, text)
    if finish == "error":
        s = ItemScore(score=0.0, correct=False, format_ok=False,
                      why=f"engine error: {out.get('error', '')}", details={})
    return s, reasons(it, text, finish, s), text, finish


def _badcase(it: EvalItem, s: ItemScore, why_un: list[str]) -> bool:
    # Without a reference nobody knows whether the answer was wrong: no badcase either way.
    return not it.reference_free and ((not s.correct) or bool(why_un))


def score_outputs(items: list[EvalItem], outputs: list[dict],
                  budgets: dict[str, int] | None = None) -> tuple[list[ItemOutcome], list[ItemScore]]:
    """Score stored outputs: everything here is a pure function of (item, output record), so
    anyone holding the eval set and the stored outputs recomputes the same verdicts. An item
    sampled k times is one outcome whose figures are per-item rates over its samples."""
    outcomes, scores = [], []
    for it, out in zip(items, outputs):
        if "samples" in out:
            o, s = _sampled_outcome(it, out, budgets)
            outcomes.append(o)
            scores.append(s)
            continue
        s, why_un, text, finish = _score_one(it, out)
        outcomes.append(ItemOutcome(
            item_id=it.id, task=it.task, difficulty=it.difficulty, critical=it.critical,
            output=text, finish_reason=finish, generated_tokens=out.get("generated_tokens", 0),
            max_tokens=budget(it, budgets) if budgets is not None else None,
            score=s.score, correct=s.correct, format_ok=s.format_ok,
            strict_format=None if finish == "error" else s.strict_format,
            badcase=_badcase(it, s, why_un), unacceptable=why_un,
            details=dict(_jsonable(s.details), why=s.why), reused=bool(out.get("reused")),
            reference_free=it.reference_free, decode=out.get("decode") or {}))
        scores.append(s)
    return outcomes, scores


def _sampled_outcome(it: EvalItem, out: dict, budgets) -> tuple[ItemOutcome, ItemScore]:
    samples, scored = [], []
    for rec in out["samples"]:
        s, why_un, text, finish = _score_one(it, rec)
        scored.append((s, why_un, finish))
        samples.append(SampleOutcome(
            seed=rec.get("seed", 0), output=text, finish_reason=finish,
            generated_tokens=rec.get("generated_tokens", 0), score=s.score, correct=s.correct,
            format_ok=s.format_ok, badcase=_badcase(it, s, why_un), unacceptable=why_un))
    k = len(samples)
    shares = {"unacceptable": sum(bool(x.unacceptable) for x in samples) / k,
              "badcase": sum(x.badcase for x in samples) / k,
              "format_ok": sum(x.format_ok for x in samples) / k,
              "correct": sum(x.correct for x in samples) / k}
    strict = [s.strict_format for s, _, f in scored if f != "error" and s.strict_format is not None]
    if strict:
        shares["strict_format"] = sum(strict) / len(strict)
    first, why0, _ = scored[0]
    score = sum(x.score for x in samples) / k
    reasons_all = sorted({r for x in samples for r in x.unacceptable})
    agg = ItemScore(score=score, correct=shares["correct"] == 1.0,
                    format_ok=shares["format_ok"] == 1.0, why=first.why, details=first.details,
                    strict_format=None if not strict else all(strict))
    return ItemOutcome(
        item_id=it.id, task=it.task, difficulty=it.difficulty, critical=it.critical,
        output=samples[0].output, finish_reason=samples[0].finish_reason,
        generated_tokens=round(sum(x.generated_tokens for x in samples) / k),
        max_tokens=budget(it, budgets) if budgets is not None else None, score=score,
        correct=agg.correct, format_ok=agg.format_ok, strict_format=agg.strict_format,
        badcase=shares["badcase"] > 0, unacceptable=reasons_all,
        details=dict(_jsonable(first.details), why=first.why), reused=bool(out.get("reused")),
        samples=samples, shares=shares, reference_free=it.reference_free), agg


def _jsonable(d: dict) -> dict:
    return json.loads(json.dumps(d, default=str))


def _candidate_eval(cand: Candidate, items, outcomes, scores, ref_outcomes, ref_scores,
                    generated: int, reused: int, resamples: int, seed: int) -> CandidateEval:
    un = unacceptable_summary(outcomes)  # every item: the rate needs no reference
    all_outcomes = outcomes  # stored in full: format compliance and length read them
    keep = [i for i, it in enumerate(items) if not it.reference_free]
    if len(keep) < len(items):  # scores, gaps and badcases: only items with a reference
        items, outcomes, scores, ref_outcomes, ref_scores = (
            [xs[i] for i in keep] for xs in (items, outcomes, scores, ref_outcomes, ref_scores))
    per_task = gaps_by(lambda it: it.task, items, outcomes, ref_outcomes, scores, ref_scores,
                       True, resamples, seed)
    per_diff = gaps_by(lambda it: it.difficulty or "unrated", items, outcomes, ref_outcomes,
                       scores, ref_scores, False, resamples, seed)
    overall = group_gap(items, outcomes, ref_outcomes, scores, ref_scores, None, resamples, seed)
    return CandidateEval(name=cand.name, candidate=cand, per_task=per_task, per_difficulty=per_diff,
                         overall=overall, unacceptable_rate=un.rate, unacceptable=un,
                         badcases=badcase_list(items, outcomes, ref_outcomes),
                         generated=generated, reused=reused, items=all_outcomes)


def result_key(items: list[EvalItem], reference: Candidate, candidates: list[Candidate],
               budgets: dict[str, int], resamples: int, seed: int,
               extra: dict | None = None) -> str:
    # The items themselves, not the file: a --limit slice is a different evaluation.
    data = hashlib.sha256(json.dumps([it.model_dump(mode="json") for it in items],
                                     sort_keys=True).encode()).hexdigest()
    blob = {"data": data, "ref": content_key(reference),
            "cands": [content_key(c) for c in candidates], "budgets": budgets,
            "scorers": SCORER_VERSION, "bootstrap": [resamples, seed]}
    if extra:  # sampling, sequential settings: absent for a fixed-N greedy run (old keys hold)
        blob["extra"] = extra
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:32]


def eval_key(items: list[EvalItem], reference: Candidate, candidates: list[Candidate],
             budgets: dict[str, int] | None, sampling: dict | None, samples: int,
             sequential: "Sequential | None", resamples: int = BOOTSTRAP_RESAMPLES,
             seed: int = BOOTSTRAP_SEED) -> str:
    """The key `run_eval` stores its EvalResult under, from its own arguments (a set with
    reference-free items runs fixed N: no looks in the key)."""
    if sequential is not None and any(it.reference_free for it in items):
        sequential = None
    return result_key(items, reference, candidates, dict(DEFAULT_MAX_TOKENS, **(budgets or {})),
                      resamples, seed, key_extra(sampling, samples if sampling else 1, sequential))


def key_extra(sampling: dict | None, k: int, sequential: "Sequential | None") -> dict | None:
    """What besides items, models and budgets an eval's key holds: sampling and the sequential
    settings (None for a fixed-N greedy run, so the keys stored before them hold)."""
    extra = {}
    if sampling:
        extra["sampling"] = dict(sampling, samples=k)
    if sequential is not None:
        extra["sequential"] = {"gates": [g.model_dump(mode="json") for g in sequential.gates],
                               "look_items": sequential.look_items,
                               "budget": sequential.deadline is not None}
    return extra or None


class _Overall:
    """One count over every model's generations from `collect_outputs`' per-call counts. With
    fixed N each call holds every item, so a model's count starts at its place in the queue
    plus what the store already had; sequential looks only add what each call generated."""

    def __init__(self, progress: Tick, per_model: int, total: int, fixed: bool) -> None:
        self.progress, self.per_model, self.total, self.fixed = progress, per_model, total, fixed
        self.done, self.model = 0, -1

    def call(self) -> Tick:
        """The callback for one `collect_outputs` call (one model, one look)."""
        self.model += 1
        seen: list[int] = []

        def tick(ev: ProgressEvent) -> None:
            if not seen and self.fixed:
                self.done = self.model * self.per_model + ev.done
            elif seen:
                self.done += ev.done - seen[-1]
            seen.append(ev.done)
            self.progress(ProgressEvent(self.done, self.total, ev.what))
        return tick


def run_eval(items: list[EvalItem], reference: Candidate, candidates: list[Candidate],
             store: ResultStore, *, data_path: str, data_sha: str, problems: list[InputError] | None = None,
             budgets: dict[str, int] | None = None, resamples: int = BOOTSTRAP_RESAMPLES,
             seed: int = BOOTSTRAP_SEED,
             progress: Tick | None = None,
             sampling: dict | None = None, samples: int = 1,
             sequential: "Sequential | None" = None, parallel: int = 1) -> EvalResult | None:
    """Every model on every item (fixed N), or in looks that stop what is settled
    (`sequential`, evaluate/looks.py). With `sampling`, `samples` outputs per item. None only
    when a time budget ran out before the reference answered one item. `progress` counts
    generations over every model: len(items) per model with fixed N, at most that when
    sequential."""
    budgets = dict(DEFAULT_MAX_TOKENS, **(budgets or {}))
    n_free = sum(it.reference_free for it in items)
    if items and n_free == len(items):
        raise EdgepickError(f"{data_path}: every item is without a reference; scores need some "
                            "that have one (mix the set with one that does, or fill them in)")
    free_note = reference_free_note(n_free, len(items))
    if n_free and sequential is not None:
        # The looks settle gates on scores these items have none of: every item, fixed N.
        sequential = None
        free_note += " (fixed N: sequential looks need scores)"
    k = samples if sampling else 1
    gen = dict(sampling=sampling, samples=k, parallel=parallel)
    counter = _Overall(progress or silent, len(items), len(items) * (1 + len(candidates)),
                       fixed=sequential is None)
    info = None
    if sequential is None:
        ref_ix = list(range(len(items)))
        cand_ix = [ref_ix] * len(candidates)
        outs = []
        counts = []
        for model in [reference, *candidates]:
            out, made, reused = collect_outputs(model, items, store, budgets, counter.call(),
                                                **gen)
            outs.append(dict(enumerate(out)))
            counts.append((made, reused))
    else:
        counts_by: dict[int, list[int]] = {}

        def generate(model, ix, deadline):
            if not ix:
                return {}
            t0 = now()
            out, made, reused = collect_outputs(model, [items[i] for i in ix], store, budgets,
                                                counter.call(), deadline=deadline, **gen)
            c = counts_by.setdefault(id(model), [0, 0, 0.0])
            c[0] += made
            c[1] += reused
            c[2] += now() - t0  # model load included: what a skipped generation would cost
            return {i: o for i, o in zip(ix, out) if o is not None}

        def score(ix, recs):
            return score_outputs([items[i] for i in ix], recs, budgets)[0]

        cand_ix, ref_ix, outs, info = run_looks(items, reference, candidates, sequential,
                                                generate, score, k)
        counts = [tuple(counts_by.get(id(m), [0, 0])[:2]) for m in [reference, *candidates]]
        timed = {m.name: c[2] / c[0] for m in [reference, *candidates]
                 if (c := counts_by.get(id(m))) and c[0]}
        info = info.model_copy(update={"seconds_per_generation": timed})

    def evaluated(pos: int, ix: list[int]):
        its = [items[i] for i in ix]
        oc, sc = score_outputs(its, [outs[pos][i] for i in ix], budgets)
        ro, rs = score_outputs(its, [outs[0][i] for i in ix], budgets)
        return its, oc, sc, ro, rs

    if not ref_ix:  # a time budget spent before the first item: nothing measured, nothing stored
        return None
    its, ro, rs, _, _ = evaluated(0, ref_ix)
    ref_eval = _candidate_eval(reference, its, ro, rs, ro, rs, counts[0][0], counts[0][1],
                               resamples, seed)
    cand_evals = []
    for ci, cand in enumerate(candidates):
        if not cand_ix[ci]:  # budget spent before its first item: its quality is unmeasured
            continue
        its, oc, sc, ro, rs = evaluated(1 + ci, cand_ix[ci])
        cand_evals.append(_candidate_eval(cand, its, oc, sc, ro, rs, counts[1 + ci][0],
                                          counts[1 + ci][1], resamples, seed))
    if info is not None:  # a stopped cell has fewer items than fixed N planned: decide's task
        for ce in (ref_eval, *cand_evals):  # mix reads the plan (decide/hybrid.py: task_mix)
            for task, g in ce.per_task.items():
                g.metrics["planned_items"] = float(info.planned_per_task.get(task, g.n))
    key = eval_key(items, reference, candidates, budgets, sampling, samples, sequential,
                   resamples, seed)
    result = EvalResult(data=data_path, data_sha256=data_sha, n_items=len(items),
                        n_invalid_lines=len({(p.path, p.line) for p in problems or []}),
                        problems=[str(p) for p in problems or []], reference=ref_eval,
                        candidates=cand_evals,
                        bootstrap=BootstrapSettings(resamples=resamples, seed=seed),
                        max_tokens=budgets, scorer_version=SCORER_VERSION, key=key,
                        samples=k, sampling=sampling, sequential=info, reference_free=n_free,
                        reference_free_note=free_note, task_constraints=task_constraints(items))
    store.put(EVAL_KIND, key, result.model_dump(mode="json"),
              label=", ".join(c.name for c in candidates) + f" vs {reference.name}")
    return result
