"""The eval stage's entry point: candidates and a reference over an eval set, one stored
EvalResult (seed 000 §3.1 and §3.3: the gap on your own data, per task, with its interval)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from edgepick.clock import now
from edgepick.evaluate.eval_result import eval_key, run_eval
from edgepick.evaluate.eval_sets import DataSpec, load_sets, specs_of, spread
from edgepick.evaluate.looks import Sequential
from edgepick.evaluate.seq_gates import EvalGate
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.records.candidate import Candidate
from edgepick.records.evaluation import EvalResult


class EvalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # A JSONL file or bundled set name, or several, each with its own limit (eval_sets.py).
    data: str | list[str | DataSpec]
    reference: Candidate
    candidates: list[Candidate] = Field(..., min_length=1)
    limit: int | None = Field(None, ge=1)  # per set without its own: items spread over tasks
    max_tokens: dict[str, int] = Field(default_factory=dict)  # per-task generation budgets
    # The deployment's sampling (scenario `sampling`): temperature, top_p, top_k, repeat_penalty;
    # None = greedy. `samples` outputs per item, each with its recorded seed.
    sampling: dict | None = None
    samples: int = Field(1, ge=1, le=64)
    # Sequential looks (evaluate/looks.py): stop each candidate once its gates are settled.
    # False: every model on every item (fixed N). The gates come from the scenario.
    sequential: bool = False
    gates: list[EvalGate] = Field(default_factory=list)
    look_items: int = Field(4, ge=1)
    max_items: int | None = Field(None, ge=1)  # per model over all sets (round-robin over tasks)
    budget_s: float | None = Field(None, gt=0)  # seconds of generation left for this stage
    # items an engine that decodes sequences together takes at once (outputs/collect_outputs);
    # not part of the key: the stored records are the same
    parallel: int = Field(1, ge=1, le=64)
    # sequential: candidates left out because they fail a gate no routing avoids (the plan's
    # eval stage finds them on this run's measurements) -> that gate; the result names them
    not_evaluated: dict[str, str] = Field(default_factory=dict)


def distinct_names(cands: list[Candidate]) -> None:
    """Two files with one name must stay apart in the tables and the report."""
    seen: dict[str, int] = {}
    for c in cands:
        seen[c.name] = seen.get(c.name, 0) + 1
        if seen[c.name] > 1:
            c.label = f"{c.name}#{seen[c.name]}"


def request_items(req: EvalRequest):
    """(the sets as loaded, the items the request evaluates: each set's limit, then the cap
    over all sets)."""
    sets = load_sets(specs_of(req.data, req.limit))
    return sets, spread(sets.items, req.max_items)


def _sequential(req: EvalRequest):
    if not req.sequential:
        return None

    return Sequential(gates=req.gates, look_items=req.look_items, budget_s=req.budget_s,
                      not_evaluated=req.not_evaluated,
                      deadline=None if req.budget_s is None else now() + req.budget_s)


def store_key(req: EvalRequest) -> str:
    """The key `run(req)` stores its EvalResult under (kind "eval")."""
    _, items = request_items(req)
    return eval_key(items, req.reference, req.candidates, req.max_tokens, req.sampling,
                    req.samples, _sequential(req))


def run(req: EvalRequest, store, progress: Tick = silent) -> EvalResult | None:
    """Outputs are stored one by one (an interrupted eval resumes), then scored; the result is
    stored under kind "eval" (`store_key`). Bad lines of the data file are skipped and listed
    in the result. None only when `budget_s` ran out before the first item (nothing measured
    or stored)."""
    sets, items = request_items(req)
    # The count runs against fixed N (the most sequential looks can take) and ends at what the
    # looks used: a bar that stops short of a total it never needed reads as unfinished.
    done = [0]

    def tick(ev: ProgressEvent) -> None:
        done[0] = ev.done
        progress(ev)

    # sets.sha: the files and which of their items were used (a --limit slice differs).
    result = run_eval(items, req.reference, req.candidates, store, data_path=sets.label,
                      data_sha=sets.sha, problems=sets.problems, budgets=req.max_tokens or None,
                      progress=tick, sampling=req.sampling,
                      samples=req.samples, sequential=_sequential(req), parallel=req.parallel)
    progress(ProgressEvent(done[0], done[0], "done"))
    return result
