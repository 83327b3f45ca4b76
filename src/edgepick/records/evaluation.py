"""Task-quality results: per-item outcomes, the gap to the reference, badcases (docs/evaluate.md).

`EvalResult` is what `edgepick eval` stores under kind "eval" and what decide/report read.
Gaps are `reference − candidate`, so a positive gap means the candidate is worse.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from edgepick.records.candidate import Candidate
from edgepick.stats import wilson

# seed 004 §2.3, one code per reason; definitions and examples in evaluate/unacceptable.py.
UNACCEPTABLE_REASONS = ("engine_error", "empty", "no_answer", "invalid_json", "truncated",
                        "repetition_loop", "wrong_language", "critical_wrong")


class Rate(BaseModel):
    """A proportion counted item by item, with its Wilson 95% interval."""

    count: int
    n: int
    value: float  # count / n (0 when n is 0)
    low: float
    high: float

    @classmethod
    def of(cls, flags: list[bool]) -> "Rate":
        count, n = sum(bool(f) for f in flags), len(flags)
        lo, hi = wilson(count, n)
        return cls(count=count, n=n, value=count / n if n else 0.0, low=lo, high=hi)


class SampleOutcome(BaseModel):
    """One of an item's k samples under the deployment's sampling (seed recorded)."""

    seed: int
    output: str
    finish_reason: str
    generated_tokens: int = 0
    score: float
    correct: bool
    format_ok: bool
    badcase: bool
    unacceptable: list[str] = Field(default_factory=list)


class ItemOutcome(BaseModel):
    """One model's output on one item, scored. With k samples the item stays the unit: score is
    their mean, `shares` the fraction of samples that were unacceptable / badcases / format_ok /
    correct, the flags say whether any sample was (correct: all were), `output` is sample 0's."""

    item_id: str
    task: str
    difficulty: str | None = None
    critical: bool = False
    output: str
    finish_reason: str  # "stop" | "length" | "error"
    generated_tokens: int = 0
    max_tokens: int | None = None  # the generation budget the output was produced under
    score: float  # the task's primary per-item score, in [0, 1]
    correct: bool  # the scorer's pass rule for this item (docs/evaluate.md, per task)
    format_ok: bool  # see docs/evaluate.md: label found / JSON+schema valid / number found / non-empty
    strict_format: bool | None = None  # the bare answer alone; None: the task has no strict form
    badcase: bool  # not correct, or any unacceptable reason
    unacceptable: list[str] = Field(default_factory=list)  # reasons, from UNACCEPTABLE_REASONS
    details: dict = Field(default_factory=dict)  # scorer-specific figures (e.g. parsed label)
    reused: bool = False  # True when the raw output came from the store (no inference this run)
    samples: list[SampleOutcome] = Field(default_factory=list)  # only when sampled k > 1 times
    shares: dict[str, float] = Field(default_factory=dict)  # per-item rates over the samples
    # No reference (sampled traffic): score/correct/badcase mean nothing; the item
    # counts for the unacceptable rate, format compliance and length only.
    reference_free: bool = False
    # a constrained item timed (evaluate/outputs.TIMED_ITEMS): its decode under the grammar
    # and the same prompt decoded free to the same length, {tokens, s, free_tokens, free_s}
    decode: dict[str, float] = Field(default_factory=dict)


class GroupGap(BaseModel):
    """One task type (or difficulty level): candidate against reference on the same items."""

    n: int
    score: float  # candidate: mean of per-item primary scores
    ref_score: float
    gap_abs: float  # ref_score − score
    gap_rel: float | None  # gap_abs / ref_score; None when ref_score is 0
    ci95: list[float]  # paired bootstrap 95% interval of gap_abs
    ci95_rel: list[float] | None = None  # same resamples, for gap_rel
    score_ci95: list[float] | None = None  # bootstrap 95% interval of score, within [0, 1]
    ref_score_ci95: list[float] | None = None
    badcase_rate: float
    ref_badcase_rate: float
    badcases_per_1000: float  # extra: (badcase_rate − ref_badcase_rate) × 1000, per-item counts
    badcases_per_1000_ci95: list[float] | None = None  # paired bootstrap, per 1000
    badcases: Rate | None = None  # the candidate's badcases counted item by item
    ref_badcases: Rate | None = None
    unacceptable: Rate | None = None
    ref_unacceptable: Rate | None = None
    strict_format: Rate | None = None  # over the items whose task has a strict form
    ref_strict_format: Rate | None = None
    format_ok_rate: float
    ref_format_ok_rate: float
    unacceptable_rate: float
    ref_unacceptable_rate: float
    metrics: dict[str, float] = Field(default_factory=dict)  # task extras, e.g. macro_f1
    ref_metrics: dict[str, float] = Field(default_factory=dict)


class Unacceptable(BaseModel):
    n: int
    count: int
    rate: float
    reasons: dict[str, int] = Field(default_factory=dict)  # an item may have several reasons
    low: float | None = None  # Wilson 95% interval of rate
    high: float | None = None


class Badcase(BaseModel):
    item_id: str
    task: str
    difficulty: str | None = None
    critical: bool = False
    expected: object  # the item's reference answer
    got: str  # the candidate's raw output
    reference_output: str | None = None  # what the reference model said on the same item
    why: str


class CandidateEval(BaseModel):
    name: str
    candidate: Candidate
    per_task: dict[str, GroupGap]
    per_difficulty: dict[str, GroupGap]
    overall: GroupGap
    unacceptable_rate: float
    unacceptable: Unacceptable
    badcases: list[Badcase]
    generated: int  # outputs produced by inference in this run
    reused: int  # outputs read back from the store
    items: list[ItemOutcome] = Field(default_factory=list)


class BootstrapSettings(BaseModel):
    resamples: int
    seed: int
    confidence: float = 0.95


class GateStop(BaseModel):
    """One gate as the sequential evaluation left it (anytime-valid confidence sequence)."""

    metric: str
    task: str | None = None  # None: over all tasks
    verdict: str  # pass | fail | undetermined, by the confidence sequence
    look: int | None = None  # the look (1-based) at which it settled; None: never
    items: int = 0  # items it had been judged on when it settled (or at the end)
    low: float | None = None  # the confidence sequence at the end
    high: float | None = None


class CellStop(BaseModel):
    """One (candidate, task) cell as the looks left it."""

    task: str
    items: int  # items it used
    planned: int  # what fixed N would have used
    last_look: int | None = None  # the last look that gave it items
    why: str = ""  # "settled at look N", "all N items used, still open: …", "open: …"


class SequentialCandidate(BaseModel):
    name: str
    items: int  # items evaluated
    generations: int  # outputs needed: items x samples (stored ones included)
    fixed_items: int  # what a fixed-N evaluation would have used
    stopped_look: int | None = None
    why: str = ""  # settled | cap | budget | not evaluated: <reason>
    gates: list[GateStop] = Field(default_factory=list)
    cells: list[CellStop] = Field(default_factory=list)  # one per task, in the set's order
    # why it got items after every gate it was judged on had settled ("" when it did not):
    # its rank among the survivors was still open
    went_on: str = ""


class SequentialInfo(BaseModel):
    method: str = "betting confidence sequence (Waudby-Smith & Ramdas 2024)"
    alpha: float = 0.05
    looks: int = 0
    look_items: int = 0  # items added per task and open cell at each look
    fixed_items: int = 0  # items per model under fixed N
    planned_per_task: dict[str, int] = Field(default_factory=dict)  # the fixed-N task mix
    reference_items: int = 0
    candidates: list[SequentialCandidate] = Field(default_factory=list)
    not_evaluated: dict[str, str] = Field(default_factory=dict)  # candidate -> the gate it fails
    # model name -> mean wall seconds of this run's generations (absent: all came from the store)
    seconds_per_generation: dict[str, float] = Field(default_factory=dict)
    budget_s: float | None = None
    budget_exhausted: bool = False
    undetermined: list[str] = Field(default_factory=list)  # "candidate: gate (task)" left open
    to_settle: dict[str, list[str]] = Field(default_factory=dict)  # same keys: next item ids


class EvalResult(BaseModel):
    data: str  # path of the eval set
    data_sha256: str
    n_items: int  # valid items evaluated
    n_invalid_lines: int
    problems: list[str] = Field(default_factory=list)  # one line per bad input line/field
    reference: CandidateEval  # its own scores; gaps against itself are zero by construction
    candidates: list[CandidateEval]
    bootstrap: BootstrapSettings
    max_tokens: dict[str, int]  # per-task default generation budgets in force
    scorer_version: str
    key: str = ""  # the store key this result was saved under
    samples: int = 1  # outputs per item (scenario sampling.samples); 1 = one greedy output
    sampling: dict | None = None  # temperature, top_p, top_k, repeat_penalty; None = greedy
    sequential: SequentialInfo | None = None  # None: fixed N, every model on every item
    reference_free: int = 0  # items without a reference, left out of scores, gaps, badcases
    reference_free_note: str | None = None  # the one line saying so (evaluate/reference_free.py)
    # task -> the constraint all its items share (evaluate/items.task_constraints): a schema
    # or a label set deploy.yaml can hold that task's answers to
    task_constraints: dict[str, dict] = Field(default_factory=dict)
