"""`edgepick route eval`: the edge and the cloud on the same items, the edge's confidence, and
from them the quality-vs-cloud-share curve, the calibrated threshold, cascade vs by-task vs
random at equal cloud share, and the edge/cloud consistency rate (seed 000 §6.3-6.4, seed 001
§6.3, seed 003 §8.3).

Outputs are stored where `edgepick eval` stores its own (same kind, same key), so a model
already evaluated into the store is not run again; the edge is re-run only when its stored
output lacks the token log-probabilities confidence needs.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

from edgepick.backends import get_backend
from edgepick.errors import EdgepickError
from edgepick.evaluate.eval_result import score_outputs
from edgepick.progress import ProgressEvent, Tick
from edgepick.evaluate.items import EvalItem
from edgepick.evaluate.gap import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from edgepick.evaluate.outputs import DEFAULT_MAX_TOKENS, OUTPUT_KIND, budget, output_key
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.model_ref import ModelRef
from edgepick.route import tiers
from edgepick.route.confidence import ConfidenceSettings, confidence
from edgepick.route.path_agreement import ConsistencyReport, consistency
from edgepick.route.router_model import RouterModelResult, accuracy, router_items
from edgepick.route.tiers import TierResult
from edgepick.route.curve import (DEFAULT_SHARES, Calibration, Comparison, CurvePoint,
                                  calibrate_quality, calibrate_share, cascade_curve, comparisons,
                                  gap_recovered)
from edgepick.store.identity import content_key
from edgepick.store.results import ResultStore

ROUTE_EVAL_KIND = "route_eval"


class RouteEvalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    items: list[EvalItem]
    data: str
    edge: ModelRef
    cloud: ModelRef
    settings: RuntimeSettings = Field(default_factory=RuntimeSettings)
    confidence: ConfidenceSettings = Field(default_factory=ConfidenceSettings)
    target_share: float | None = Field(None, ge=0.0, le=1.0)
    target_quality: float | None = Field(None, ge=0.0, le=1.0)
    shares: list[float] = Field(default_factory=lambda: list(DEFAULT_SHARES))
    resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = BOOTSTRAP_SEED
    # task types that never leave the device (deploy.yaml `edge_only_tasks`): never escalated,
    # so the cloud share a cascade can reach is that of the other items
    edge_only_tasks: list[str] = Field(default_factory=list)
    # further edge models after `edge`, in the cascade's order (small → medium → … → cloud):
    # the N-tier analysis of route/tiers.py, beside the edge → cloud one
    tiers: list[ModelRef] = Field(default_factory=list)
    # a small model that names each request's task type (route/router_model.py): its accuracy
    router_model: ModelRef | None = None


class RouteItem(BaseModel):
    item_id: str
    task: str
    edge_output: str
    cloud_output: str
    edge_confidence: float | None
    edge_score: float
    cloud_score: float
    edge_correct: bool
    cloud_correct: bool


class RouteEvalResult(BaseModel):
    data: str
    n_items: int
    edge: str
    cloud: str
    confidence: ConfidenceSettings
    edge_only: float
    cloud_only: float
    curve: list[CurvePoint]
    gap_recovered: float | None  # RouteLLM's APGR: 0.5 is what a coin gets
    comparisons: list[Comparison]
    calibration: Calibration | None = None
    consistency: ConsistencyReport
    items: list[RouteItem]
    generated: dict[str, int]  # model label -> outputs generated now (the rest came from the store)
    key: str
    edge_only_tasks: list[str] = Field(default_factory=list)
    max_cloud_share: float = 1.0  # the share of items allowed to reach the cloud
    tiered: TierResult | None = None  # with further edge tiers: the N-tier cascade
    router_model: RouterModelResult | None = None  # how often a router model names the task


def _candidate(ref: ModelRef, settings: RuntimeSettings) -> Candidate:
    return Candidate(model=ref.locator, backend=ref.backend, settings=settings, label=ref.label)


def collect(ref: ModelRef, items: list[EvalItem], store: ResultStore, settings: RuntimeSettings,
            logprobs: bool, progress: Tick | None = None) -> tuple[list[dict], int]:
    """One output per item (text, finish reason, token log-probabilities when asked), from the
    store when there, else generated greedily and stored; and how many were generated now."""
    cand = _candidate(ref, settings)
    ckey = content_key(cand)
    keys = [output_key(ckey, it, budget(it, DEFAULT_MAX_TOKENS), settings.seed) for it in items]
    outs: list[dict | None] = []
    for k in keys:
        got = store.get(OUTPUT_KIND, k)
        outs.append(got if got is not None and (not logprobs or "token_logprobs" in got) else None)
    missing = [i for i, o in enumerate(outs) if o is None]
    if progress:
        progress(ProgressEvent(0, len(missing), ref.label))
    if missing:
        backend = get_backend(cand.backend)
        backend.load(cand)
        try:
            for done, i in enumerate(missing, 1):
                it = items[i]
                try:
                    g = backend.generate(it.chat_messages(), budget(it, DEFAULT_MAX_TOKENS),
                                         chat=True, logprobs=logprobs)
                except EdgepickError as exc:  # not stored: the next run retries it
                    outs[i] = {"text": "", "finish_reason": "error", "error": str(exc),
                               "generated_tokens": 0}
                else:
                    rec = {"text": g.text, "finish_reason": g.finish_reason,
                           "generated_tokens": g.generated_tokens,
                           "prompt_tokens": g.prompt_tokens, "item_id": it.id}
                    if logprobs:
                        rec["token_logprobs"] = g.token_logprobs or []
                    store.put(OUTPUT_KIND, keys[i], rec, label=f"{cand.name}:{it.id}")
                    outs[i] = rec
                if progress:
                    progress(ProgressEvent(done, len(missing), ref.label))
        finally:
            backend.unload()
    return [o for o in outs if o is not None], len(missing)


def _confidences(outs: list[dict], cs: ConfidenceSettings) -> list[float | None]:
    return [None if o.get("finish_reason") == "error"
            else confidence(o.get("token_logprobs"), cs.method, cs.k) for o in outs]


def _tiered(req: RouteEvalRequest, edge_out: list[dict], tier_outs: list[list[dict]],
            cloud: list[float]) -> TierResult | None:
    """The N-tier cascade: the edge, the further tiers, the cloud (route/tiers.py)."""
    if not req.tiers:
        return None

    outs = [edge_out, *tier_outs]
    scores = [[o.score for o in score_outputs(req.items, out)[0]] for out in outs]
    return tiers.analyse([r.label for r in (req.edge, *req.tiers, req.cloud)], [*scores, cloud],
                         [_confidences(o, req.confidence) for o in outs],
                         [it.task for it in req.items], req.shares, req.target_share,
                         frozenset(req.edge_only_tasks), req.resamples, req.seed)


def analyse(req: RouteEvalRequest, edge_out: list[dict], cloud_out: list[dict],
            generated: dict[str, int], tier_outs: list[list[dict]] | None = None
            ) -> RouteEvalResult:
    """Everything but inference: scores, curve, calibration, comparisons, consistency, and
    with further edge tiers (`tier_outs`, in req.tiers' order) the N-tier cascade."""
    items = req.items
    e_outcomes, _ = score_outputs(items, edge_out)
    c_outcomes, _ = score_outputs(items, cloud_out)
    cs = req.confidence
    conf = _confidences(edge_out, cs)
    edge = [o.score for o in e_outcomes]
    cloud = [o.score for o in c_outcomes]
    tiered = _tiered(req, edge_out, tier_outs or [], cloud)
    tasks = [it.task for it in items]
    private = {t for t in tasks if t in req.edge_only_tasks}
    if private:  # an edge-only item "escalated" keeps the edge's answer, and is escalated last
        cloud = [e if t in private else c for e, c, t in zip(edge, cloud, tasks)]
        conf = [2.0 if t in private else c for c, t in zip(conf, tasks)]
    eligible = sum(t not in private for t in tasks)
    points = cascade_curve(edge, cloud, conf)[:eligible + 1]
    max_share = eligible / len(items) if items else 0.0
    calib = None
    if req.target_share is not None:
        calib = calibrate_share(points, req.target_share)
    elif req.target_quality is not None:
        calib = calibrate_quality(points, req.target_quality)
    shares = sorted(set(req.shares) | ({calib.cloud_share} if calib else set()))
    shares = [s for s in shares if 0.0 < s < 1.0 and s <= max_share + 1e-12]
    rows = [RouteItem(item_id=it.id, task=it.task, edge_output=eo.output, cloud_output=co.output,
                      edge_confidence=c, edge_score=eo.score, cloud_score=co.score,
                      edge_correct=eo.correct, cloud_correct=co.correct)
            for it, eo, co, c in zip(items, e_outcomes, c_outcomes, conf)]
    return RouteEvalResult(
        data=req.data, n_items=len(items), edge=req.edge.label, cloud=req.cloud.label,
        confidence=cs, edge_only=points[0].quality, cloud_only=points[-1].quality, curve=points,
        gap_recovered=gap_recovered(points),
        comparisons=comparisons(edge, cloud, conf, tasks, shares, req.resamples, req.seed,
                                fixed=private),
        calibration=calib,
        consistency=consistency(items, [o.output for o in e_outcomes],
                                [o.output for o in c_outcomes]),
        items=rows, generated=generated, key=result_key(req),
        edge_only_tasks=sorted(private), max_cloud_share=max_share, tiered=tiered)


def result_key(req: RouteEvalRequest) -> str:
    blob = json.dumps({"items": [it.model_dump(mode="json") for it in req.items],
                       "edge": content_key(_candidate(req.edge, req.settings)),
                       "cloud": content_key(_candidate(req.cloud, req.settings)),
                       "confidence": req.confidence.model_dump(),
                       "targets": [req.target_share, req.target_quality], "shares": req.shares,
                       "bootstrap": [req.resamples, req.seed],
                       **({"edge_only": sorted(req.edge_only_tasks)} if req.edge_only_tasks
                          else {}),
                       **({"tiers": [content_key(_candidate(r, req.settings)) for r in req.tiers]}
                          if req.tiers else {}),
                       **({"router": content_key(_candidate(req.router_model, req.settings))}
                          if req.router_model else {})}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def run(req: RouteEvalRequest, store: ResultStore, progress: Tick | None = None) -> RouteEvalResult:
    """The stage's entry point: outputs (stored), then the analysis, stored under its key."""
    if any(it.tools for it in req.items):
        # A tool item's prompt is built by the tool prompter (seed 004 §4.1); a cascade over
        # tool calls is judged by the agent loop's validation instead (docs/route.md).
        req = req.model_copy(update={"items": [it for it in req.items if not it.tools]})
    if not req.items:
        raise EdgepickError(f"{req.data}: no items to evaluate (tool_call items are left out)")
    edge_out, n_edge = collect(req.edge, req.items, store, req.settings, True, progress)
    generated = {req.edge.label: n_edge}
    tier_outs = []
    for ref in req.tiers:
        out, generated[ref.label] = collect(ref, req.items, store, req.settings, True, progress)
        tier_outs.append(out)
    cloud_out, generated[req.cloud.label] = collect(req.cloud, req.items, store, req.settings,
                                                    False, progress)
    res = analyse(req, edge_out, cloud_out, generated, tier_outs)
    if req.router_model is not None:
        asked, n = collect(req.router_model, router_items(req.items), store, req.settings,
                           False, progress)
        res.generated[req.router_model.label] = res.generated.get(req.router_model.label, 0) + n
        res.router_model = accuracy(req.router_model.label, req.items, asked)
    chain = " → ".join(r.label for r in (req.edge, *req.tiers, req.cloud))
    store.put(ROUTE_EVAL_KIND, res.key, res.model_dump(mode="json"), label=chain)
    return res
