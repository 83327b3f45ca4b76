"""Decision records: one summary row per candidate, and the scenario's verdict over them.

Every measured figure is Optional: None means "not measured", shown as such and never invented.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, computed_field, model_validator

from edgepick.records.deploy import Gate, Status, TaskRoute
# Explanation is imported from here too
from edgepick.records.decision_texts import DecisionTexts, Explanation  # noqa: F401
from edgepick.records.model_ref import DEFAULT_ENGINE
from edgepick.records.prune import PruneFacts
from edgepick.records.speculative import SpeculationChoice


class Figure(BaseModel):
    """A measured figure with its 95% interval and what it was counted from, so a verdict and a
    sample-size estimate can be recomputed: count/n for a Wilson rate, sd/n for a mean."""

    value: float
    low: float | None = None
    high: float | None = None
    n: int | None = None
    count: int | None = None  # proportions: items counted
    sd: float | None = None  # means: per-item standard deviation
    method: str = "point"  # wilson | bootstrap | order (median between min and max) | point


class TaskQuality(BaseModel):
    n: int | None = None
    score: float | None = None  # candidate's task score, 0..1
    ref_score: float | None = None
    score_ci95: list[float] | None = None  # bootstrap 95% interval of score, within [0, 1]
    gap_abs: float | None = None  # ref_score - score: positive = candidate worse
    gap_rel: float | None = None
    ci95: list[float] | None = None  # 95% bootstrap interval of gap_abs
    badcases_per_1000: float | None = None  # extra badcases vs the reference, per-item counts
    badcases_per_1000_ci95: list[float] | None = None  # paired bootstrap, per 1000
    badcases: Figure | None = None  # the candidate's own badcase rate (Wilson)
    ref_badcases: Figure | None = None  # the reference's, on the same items
    format_ok_rate: float | None = None
    unacceptable_rate: float | None = None
    unacceptable: Figure | None = None
    format_ok: Figure | None = None
    strict_format: Figure | None = None
    # the task scorer's own figures (e.g. tool_call's tool_choice_accuracy and its `_n`), and
    # output lengths (output_tokens_p50/_p95, from the stored per-item generated_tokens)
    metrics: dict[str, float] = Field(default_factory=dict)
    # the reference (the cloud side of a hybrid plan) on the same items: its own gates
    ref_score_ci95: list[float] | None = None
    ref_unacceptable: Figure | None = None
    ref_format_ok: Figure | None = None
    ref_strict_format: Figure | None = None
    ref_metrics: dict[str, float] = Field(default_factory=dict)


class CurvePoint(BaseModel):
    x: float
    y: float


class LengthPoint(BaseModel):
    """The bench at one prompt length (concurrency 1): what the gates at a product's context
    percentile read (seed 000 §7.1)."""

    prompt_tokens: int
    gen_tokens: int | None = None
    ttft_ms: Figure | None = None  # median of the repeats, [min, max] with ≥ 5 of them
    ttft_p99_ms: float | None = None
    decode_tps: Figure | None = None
    peak_rss_bytes: int | None = None  # VmHWM, for reference
    peak_need_bytes: int | None = None  # the measured need (bench/need.py); None: stored before


def _view(key: str) -> Any:
    """A read-only field showing `figures[key]`'s value (None: unmeasured)."""
    read = property(lambda self: self.figure_value(key))
    return computed_field(read, return_type=float | None)  # type: ignore[prop-decorator]


class CandidateSummary(BaseModel):
    candidate: str  # display name (label or file name)
    model: str  # file path or endpoint URL
    backend: str = DEFAULT_ENGINE
    quant: str | None = None
    params: int | None = None
    weights_bytes: int | None = None
    # efficiency (bench)
    peak_rss_bytes: int | None = None  # VmHWM: counts mapped pages never read again, for reference
    # anonymous memory + file pages read while running (bench/need.py), what fit's need predicts;
    # None for a bench stored before it was measured (the memory gate then reads VmHWM and says so)
    peak_need_bytes: int | None = None
    predicted_peak_bytes: int | None = None  # fit planner: its need total (fit/need.py)
    predicted_decode_tps: float | None = None  # at the bench's own KV fill when benched
    # the fit's estimate per KV fill and the conditions it holds for (records/fit.py), and the
    # conditions of the bench decode it is compared with: see decide/adapters.align_prediction
    predicted_decode_curve: dict[int, float] = Field(default_factory=dict)
    # the validated error band around it, as multiples of the estimate (fit/speed.py)
    predicted_decode_band: tuple[float, float] | None = None
    predicted_decode_conditions: dict = Field(default_factory=dict)  # threads, n_ubatch
    bench_decode_conditions: dict = Field(default_factory=dict)  # fill, threads, n_ubatch
    fit_verdict: str | None = None
    ttft_p99_ms: float | None = None
    prefill_tps: float | None = None
    itl_p99_ms: float | None = None
    load_ms: float | None = None
    bench_error: str | None = None  # set when the candidate failed to run (OOM, crash, timeout)
    skipped: str | None = None  # not measured on purpose or by failure upstream (build failed)
    # robustness (bench sweeps)
    ttft_curve: list[CurvePoint] = Field(default_factory=list)  # prompt tokens -> TTFT ms
    by_length: dict[int, LengthPoint] = Field(default_factory=dict)  # prompt tokens -> bench
    sustained_curve: list[CurvePoint] = Field(default_factory=list)  # seconds -> tok/s
    decay: float | None = None  # fraction lost from the first to the last sustained window
    # energy, heat and host load (bench; docs/metrics.md): None = unmeasured, never 0
    power_w: float | None = None  # mean over the timed runs, idle included
    idle_power_w: float | None = None
    prefill_energy_per_token_j: float | None = None
    power_source: str | None = None  # the counter the energy figures came from, or why none
    sustained_timeline: list[dict] = Field(default_factory=list)  # records/bench TimelinePoint
    throttled_after_s: float | None = None
    throttle_reason: str | None = None
    contended_share: float | None = None  # other work's CPU share when speed was measured busy
    # quality (evaluate)
    tasks: dict[str, TaskQuality] = Field(default_factory=dict)
    badcases: list[dict] = Field(default_factory=list)
    # task -> the constraint its eval items share ({"json_schema": …} | {"labels": […]}):
    # what deploy.yaml holds the task to when the candidate ran with constrain: grammar
    constraints: dict[str, dict] = Field(default_factory=dict)
    # Every figure a gate, the scoring, the explanation or the report reads, with its interval
    # where it has one: the one source (FIGURE_VIEWS below are read-only views of it).
    figures: dict[str, Figure] = Field(default_factory=dict)
    settings: dict | None = None  # the runtime settings the candidate was measured with
    reference: str | None = None  # the eval reference (model path or endpoint URL)
    reference_name: str | None = None
    reference_api_key_env: str | None = None  # the variable holding an endpoint reference's key
    # fidelity against the reference model
    kld_mean: float | None = None
    kld_p99: float | None = None
    ppl_ratio: float | None = None
    same_top1: float | None = None
    # blocks removed before quantizing, by which ranking on what text (the file's metadata)
    pruned: PruneFacts | None = None
    # engineering cost facts
    fallbacks: list[str] = Field(default_factory=list)
    requantized: bool | None = None
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _flat_figures(cls, data: Any) -> Any:
        """Summaries stored before `figures` was the one source carry the figures as flat
        fields: each becomes its figure (a point) unless the figure itself was stored."""
        if not isinstance(data, dict) or not any(k in data for k in FIGURE_VIEWS):
            return data
        data = dict(data)
        figures = dict(data.get("figures") or {})
        for flat, key in FIGURE_VIEWS.items():
            v = data.pop(flat, None)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and key not in figures:
                figures[key] = Figure(value=float(v))
        data["figures"] = figures
        return data

    def figure_value(self, key: str) -> float | None:
        f = self.figures.get(key)
        return None if f is None else f.value

    # read-only views of `figures`, kept in the stored shape under their old names
    ttft_p50_ms = _view("ttft_p50_ms")
    decode_tps = _view("decode_tps")
    energy_per_token_j = _view("energy_per_token_j")  # decode, idle subtracted
    memory_growth_mib_per_1k = _view("memory_growth")
    quality_overall = _view("quality")
    format_compliance = _view("format_compliance")
    unacceptable_rate = _view("unacceptable_rate")
    # the sustained run's mean power, else the timed runs' (what the power gate reads)
    sustained_power_w = _view("sustained_power_w")

    @property
    def ttft_growth(self) -> float | None:
        pts = sorted(self.ttft_curve, key=lambda p: p.x)
        if len(pts) < 2 or pts[0].y <= 0:
            return None
        return pts[-1].y / pts[0].y

    @property
    def tail_ratio(self) -> float | None:
        if self.ttft_p50_ms and self.ttft_p99_ms:
            return self.ttft_p99_ms / self.ttft_p50_ms
        return None


# The flat names summaries once carried (and still show, read-only) -> their `figures` key.
FIGURE_VIEWS = {"ttft_p50_ms": "ttft_p50_ms", "decode_tps": "decode_tps",
                "energy_per_token_j": "energy_per_token_j",
                "memory_growth_mib_per_1k": "memory_growth", "quality_overall": "quality",
                "format_compliance": "format_compliance", "unacceptable_rate": "unacceptable_rate",
                "sustained_power_w": "sustained_power_w"}


class Violation(BaseModel):
    constraint: str  # e.g. "ttft_p50_ms_max"; or runs | skipped | measured | fit
    metric: str  # e.g. "TTFT P50"
    value: float | None
    limit: float
    unit: str = ""
    op: str = ""  # ">" or "<": how the value broke the limit
    value_text: str = ""  # the value and the limit as shown ("42.0%", "231 MiB")
    limit_text: str = ""
    detail: str | None = None  # the error or reason, for runs / skipped
    text: str  # English sentence (decide/texts.py renders other languages)


class RankedCandidate(BaseModel):
    candidate: str
    score: float | None  # None when eliminated
    eliminated: bool
    reasons: list[str] = Field(default_factory=list)
    violations: list[Violation] = Field(default_factory=list)
    layer_scores: dict[str, float | None] = Field(default_factory=dict)
    metric_scores: dict[str, float | None] = Field(default_factory=dict)
    unchecked: list[str] = Field(default_factory=list)  # constraints with no measurement
    missing: list[str] = Field(default_factory=list)  # scored metrics not measured (scored 0)
    pareto: bool = False
    gates: list[Gate] = Field(default_factory=list)  # every hard constraint, with its verdict
    task_gates: dict[str, list[Gate]] = Field(default_factory=dict)  # quality gates per task
    status: str = "provisional"  # proven | provisional | eliminated


class UnservedTask(BaseModel):
    """A task type neither side can serve: what fails on the edge, and why not the cloud."""

    task: str
    share: float | None = None
    edge_fails: list[Gate] = Field(default_factory=list)  # the edge's failing task gates
    cloud_fails: list[Gate] = Field(default_factory=list)  # the cloud's own failing task gates
    cloud_blocked: str | None = None  # network: offline | edge_only_tasks | max_cloud_share
    cloud_no_better: bool = False  # the cloud passes but does not lower badcases (paired)
    extra: list[float] | None = None  # edge − cloud badcases per 1000: [value, low, high]


class HybridPlan(BaseModel):
    """Edge for the task types the candidate clears, the reference/cloud for the rest."""

    candidate: str
    routes: list[TaskRoute]
    cloud_share: float  # share of requests sent to the cloud under the task mix
    badcases_per_1000: float  # expected under the mix, edge and cloud together
    low: float | None = None
    high: float | None = None
    mix_source: str = ""  # "scenario task_mix" or "eval set proportions"
    cost_per_1000: float | None = None  # cloud cost per 1000 requests (scenario's price)
    unserved: list[UnservedTask] = Field(default_factory=list)  # a plan with these is no plan


class TeamMember(BaseModel):
    """One edge model of a team: the tasks assigned to it, their share of requests, its need."""

    candidate: str
    tasks: list[str]
    share: float  # of requests under the task mix
    need_bytes: int | None = None  # measured need (VmHWM where no need was stored)
    pin: bool = False  # always resident; else loaded on demand into the one free slot
    load_ms: float | None = None  # measured model load time (bench), None: unmeasured


class TeamPlan(BaseModel):
    """Several edge models, each task on one that passes that task's gates (decide/team.py)."""

    members: list[TeamMember]  # the default model (largest share) first
    routes: list[TaskRoute]  # route = the member's candidate name
    badcases_per_1000: float  # expected under the mix
    low: float | None = None
    high: float | None = None
    mix_source: str = ""
    memory_bytes: int | None = None  # pinned needs + the largest on-demand one
    budget_bytes: int | None = None  # the limit it was checked against
    fits: bool = False  # a team that does not fit is kept only to say why it was not proposed
    swaps_per_1000: float = 0.0  # expected model loads per 1000 requests (decide/team.py)
    swap_ms_per_request: float | None = None  # expected load time per request; None: unmeasured
    hybrid: HybridPlan | None = None  # the edge+cloud option the team was preferred to


class Decision(BaseModel):
    scenario: str
    budget_bytes: int | None = None
    ranking: list[RankedCandidate]
    recommendation: str | None
    status: Status = "none"  # proven | provisional | hybrid | none
    hybrid: HybridPlan | None = None
    team: TeamPlan | None = None  # status team: several edge models
    team_refused: TeamPlan | None = None  # the smallest team serving every task, over budget
    runner_up: str | None = None
    closest: str | None = None  # when nothing survives: the candidate nearest to passing
    pareto: list[str] = Field(default_factory=list)
    explanation: Explanation = Field(default_factory=Explanation)
    normalisation: str = ""
    # status none because some task types have no side that serves them
    unserved: list[UnservedTask] = Field(default_factory=list)
    # the decision in words, every language (decide/wording.py); report renders only this
    texts: DecisionTexts | None = None
    # speculative decoding per task for the recommendation, from its per-task measurement
    speculation: SpeculationChoice | None = None


class DecisionRecord(BaseModel):
    """What the decide stage (decide/stage.py) made: the decision over its summaries, the runs
    they were read from, and the files written."""

    decision: Decision
    summaries: list[CandidateSummary]
    runs: dict[str, list[int]] = Field(default_factory=dict)  # kind -> runs the figures come from
    deploy: str | None = None  # the deploy.yaml written
    deploy_replaced: bool = False  # it replaced an existing file
    reports: list[str] = Field(default_factory=list)  # report files, HTML first
    notes: list[str] = Field(default_factory=list)  # what the caller should say
