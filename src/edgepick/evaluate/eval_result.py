"""`edgepick eval` end to end: outputs (stored), scores, gaps, badcases → one EvalResult."""

from __future__ import annotations

import hashlib
import json
from typing import Callable

from edgepick.errors import InputError
from edgepick.evaluate.gap import (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, badcase_list, gaps_by,
                                   group_gap, unacceptable_summary)
from edgepick.evaluate.items import EvalItem
from edgepick.evaluate.outputs import DEFAULT_MAX_TOKENS, budget, collect_outputs
from edgepick.evaluate.scorers import ItemScore, get_scorer
from edgepick.evaluate.unacceptable import reasons
from edgepick.records.candidate import Candidate
from edgepick.records.evaluation import BootstrapSettings, CandidateEval, EvalResult, ItemOutcome
from edgepick.store.results import ResultStore

EVAL_KIND = "eval"
SCORER_VERSION = "3"  # bump when a scorer's rules change, so stored EvalResults are not reused


def score_outputs(items: list[EvalItem], outputs: list[dict],
                  budgets: dict[str, int] | None = None) -> tuple[list[ItemOutcome], list[ItemScore]]:
    """Score stored outputs: everything here is a pure function of (item, output record), so
    anyone holding the eval set and the stored outputs recomputes the same verdicts."""
    outcomes, scores = [], []
    for it, out in zip(items, outputs):
        text = out.get("text", "")
        finish = out.get("finish_reason", "stop")
        s = get_scorer(it.task).score(it, text)
        if finish == "error":
            s = ItemScore(score=0.0, correct=False, format_ok=False,
                          why=f"engine error: {out.get('error', '')}", details={})
        why_un = reasons(it, text, finish, s)
        outcomes.append(ItemOutcome(
            item_id=it.id, task=it.task, difficulty=it.difficulty, critical=it.critical,
            output=text, finish_reason=finish, generated_tokens=out.get("generated_tokens", 0),
            max_tokens=budget(it, budgets) if budgets is not None else None,
            score=s.score, correct=s.correct, format_ok=s.format_ok,
            strict_format=None if finish == "error" else s.strict_format,
            badcase=(not s.correct) or bool(why_un), unacceptable=why_un,
            details=dict(_jsonable(s.details), why=s.why), reused=bool(out.get("reused"))))
        scores.append(s)
    return outcomes, scores


def _jsonable(d: dict) -> dict:
    return json.loads(json.dumps(d, default=str))


def _candidate_eval(cand: Candidate, items, outcomes, scores, ref_outcomes, ref_scores,
                    generated: int, reused: int, resamples: int, seed: int) -> CandidateEval:
    per_task = gaps_by(lambda it: it.task, items, outcomes, ref_outcomes, scores, ref_scores,
                       True, resamples, seed)
    per_diff = gaps_by(lambda it: it.difficulty or "unrated", items, outcomes, ref_outcomes,
                       scores, ref_scores, False, resamples, seed)
    overall = group_gap(items, outcomes, ref_outcomes, scores, ref_scores, None, resamples, seed)
    un = unacceptable_summary(outcomes)
    return CandidateEval(name=cand.name, candidate=cand, per_task=per_task, per_difficulty=per_diff,
                         overall=overall, unacceptable_rate=un.rate, unacceptable=un,
                         badcases=badcase_list(items, outcomes, ref_outcomes),
                         generated=generated, reused=reused, items=outcomes)


def result_key(items: list[EvalItem], reference: Candidate, candidates: list[Candidate],
               budgets: dict[str, int], resamples: int, seed: int) -> str:
    # The items themselves, not the file: a --limit slice is a different evaluation.
    data = hashlib.sha256(json.dumps([it.model_dump(mode="json") for it in items],
                                     sort_keys=True).encode()).hexdigest()
    blob = json.dumps({"data": data, "ref": reference.content_key(),
                       "cands": [c.content_key() for c in candidates], "budgets": budgets,
                       "scorers": SCORER_VERSION, "bootstrap": [resamples, seed]}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def run_eval(items: list[EvalItem], reference: Candidate, candidates: list[Candidate],
             store: ResultStore, *, data_path: str, data_sha: str, problems: list[InputError] | None = None,
             budgets: dict[str, int] | None = None, resamples: int = BOOTSTRAP_RESAMPLES,
             seed: int = BOOTSTRAP_SEED,
             on_start: Callable[[str, int], None] | None = None,
             on_item: Callable[[], None] | None = None) -> EvalResult:
    budgets = dict(DEFAULT_MAX_TOKENS, **(budgets or {}))
    ref_out, ref_gen, ref_reused = collect_outputs(reference, items, store, budgets, on_start, on_item)
    ref_outcomes, ref_scores = score_outputs(items, ref_out, budgets)
    ref_eval = _candidate_eval(reference, items, ref_outcomes, ref_scores, ref_outcomes, ref_scores,
                               ref_gen, ref_reused, resamples, seed)
    cand_evals = []
    for cand in candidates:
        out, gen, reused = collect_outputs(cand, items, store, budgets, on_start, on_item)
        outcomes, scores = score_outputs(items, out, budgets)
        cand_evals.append(_candidate_eval(cand, items, outcomes, scores, ref_outcomes, ref_scores,
                                          gen, reused, resamples, seed))
    key = result_key(items, reference, candidates, budgets, resamples, seed)
    result = EvalResult(data=data_path, data_sha256=data_sha, n_items=len(items),
                        n_invalid_lines=len({(p.path, p.line) for p in problems or []}),
                        problems=[str(p) for p in problems or []], reference=ref_eval,
                        candidates=cand_evals,
                        bootstrap=BootstrapSettings(resamples=resamples, seed=seed),
                        max_tokens=budgets, scorer_version=SCORER_VERSION, key=key)
    store.put(EVAL_KIND, key, result.model_dump(mode="json"),
              label=", ".join(c.name for c in candidates) + f" vs {reference.name}")
    return result
