"""The decision as `deploy.yaml` (records/deploy.py, docs/deploy.md): the chosen model file and
its sha256, the runtime settings it was measured with, the per-task route, and the gates with
their measured values, so serve/route/monitor run exactly what was proven (seed 000 §7.3-7.4,
seed 001 §6.4)."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError

from edgepick.decide.hybrid import edge_latency, task_mix
from edgepick.decide.scenarios import Scenario
from edgepick.errors import EdgepickError
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.decision import CandidateSummary, Decision
from edgepick.records.deploy import (TEAM_SCHEMA_VERSION, Baseline, CloudEndpoint, DeployConfig,
                                     DeployModel, Sampling, TaskConstraint, TaskRoute)
from edgepick.records.team import EdgeModel, MemoryPlan
from edgepick.store.identity import file_sha256


def _cloud(s: CandidateSummary) -> CloudEndpoint | None:
    """The eval reference when it is an endpoint; a local reference has no URL to route to."""
    ref = s.reference or ""
    if not ref.startswith(("http://", "https://")):
        return None
    base, _, name = ref.partition("#")
    key_env = {"api_key_env": s.reference_api_key_env} if s.reference_api_key_env else {}
    return CloudEndpoint(url=base.rstrip("/"), model=name or None, **key_env)


def _routes(d: Decision, s: CandidateSummary, sc: Scenario) -> list[TaskRoute]:
    if d.hybrid is not None:
        return list(d.hybrid.routes)
    if d.team is not None:
        return list(d.team.routes)

    mix, _ = task_mix(s, sc)
    out = []
    for task, q in sorted(s.tasks.items()):
        b = q.badcases
        out.append(TaskRoute(task=task, route="edge", share=mix.get(task),
                             latency_ms=edge_latency(s, q, sc),
                             badcases_per_1000=None if b is None else b.value * 1000,
                             low=None if b is None or b.low is None else b.low * 1000,
                             high=None if b is None or b.high is None else b.high * 1000))
    return out


def build_deploy(d: Decision, summaries: list[CandidateSummary], sc: Scenario, *,
                 device: str | None = None, run_id: str | None = None) -> DeployConfig:
    """DeployConfig for the recommended candidate (proven, provisional or hybrid)."""
    if d.recommendation is None:
        raise EdgepickError("no candidate can be recommended, so there is nothing to deploy: "
                            + (d.explanation.why[1] if len(d.explanation.why) > 1
                               else "see the decision's explanation"))
    by_name = {x.candidate: x for x in summaries}
    s = by_name[d.recommendation]
    ranked = next(r for r in d.ranking if r.candidate == d.recommendation)
    model, settings = _model(s), _settings(s)
    un, fmt = s.figures.get("unacceptable_rate"), s.figures.get("format_compliance")
    notes = list(d.explanation.watch)
    cloud = _cloud(s)
    if d.hybrid is not None and cloud is None:
        notes.insert(0, f"the cloud side was measured with the local reference "
                        f"{s.reference_name or s.reference}; set cloud.url to the endpoint that "
                        "serves it (or an equivalent) before serving")
    return DeployConfig(
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        run_id=None if run_id is None else str(run_id), scenario=sc.name, device=device,
        status=d.status, model=model, runtime=settings, routes=_routes(d, s, sc),
        default_route="edge", cloud_share=d.hybrid.cloud_share if d.hybrid else 0.0,
        cloud=cloud, gates=ranked.gates,
        baseline=Baseline(ttft_p50_ms=s.ttft_p50_ms, ttft_p99_ms=s.ttft_p99_ms,
                          decode_tps=s.decode_tps, peak_memory_bytes=s.peak_rss_bytes,
                          unacceptable_rate=None if un is None else un.value,
                          format_error_rate=None if fmt is None else 1 - fmt.value,
                          badcases_per_1000=_overall_badcases(d, s),
                          power_w=s.sustained_power_w if s.sustained_power_w is not None
                          else s.power_w,
                          temperature_c=max((p["temperature_c"] for p in s.sustained_timeline
                                             if p.get("temperature_c") is not None),
                                            default=None)),
        notes=notes, sampling=_sampling(sc, settings), lock_sampling=sc.lock_sampling,
        edge_only_tasks=list(sc.edge_only_tasks), network=sc.network,
        context_tokens=sc.context_tokens.model_dump() if sc.context_tokens else None,
        output_tokens=sc.output_tokens.model_dump() if sc.output_tokens else None,
        constraints=_constraints(s, settings), **_team(d, by_name))


def _model(s: CandidateSummary) -> DeployModel:
    is_file = "://" not in s.model and os.path.isfile(s.model)

    return DeployModel(name=s.candidate, path=os.path.realpath(s.model) if is_file else s.model,
                       sha256=file_sha256(s.model) if is_file else "", quant=s.quant,
                       backend=s.backend, pruned=s.pruned)


def _settings(s: CandidateSummary) -> RuntimeSettings:
    return RuntimeSettings.model_validate(s.settings) if s.settings else RuntimeSettings()


def _constraints(s: CandidateSummary, settings: RuntimeSettings) -> dict[str, TaskConstraint]:
    """Per task, the schema or label set its eval items shared, when the chosen candidate was
    measured decoding under them (constrain: grammar): serve then holds that task's requests to
    the same constraint. A free candidate's deploy has none."""
    if settings.constrain != "grammar":
        return {}

    out = {}
    for task, c in sorted(s.constraints.items()):
        try:
            out[task] = TaskConstraint.model_validate(c)
        except ValidationError:  # eval refused its items' schema too: nothing was measured
            continue
    return out


def _team(d: Decision, by_name: dict[str, CandidateSummary]) -> dict:
    """A team's models (schema 2): each with its own settings, residency and measured need; the
    default model (`model`, the largest share) first; the budget its memory plan was checked
    against. Nothing for a single model, so its file stays schema 1."""
    if d.team is None:
        return {}
    # a team's models carry no pruning facts (the single model's section does)
    models = [EdgeModel(**_model(by_name[m.candidate]).model_dump(exclude={"pruned"}),
                        runtime=_settings(by_name[m.candidate]), pin=m.pin,
                        need_bytes=m.need_bytes) for m in d.team.members]
    return {"schema_version": TEAM_SCHEMA_VERSION, "models": models,
            "memory": MemoryPlan(budget_bytes=d.team.budget_bytes)}


def _sampling(sc: Scenario, settings: RuntimeSettings) -> Sampling | None:
    """The scenario's sampling as serve's defaults, seeded as the measurements were."""
    if sc.sampling is None:
        return None
    sp = sc.sampling
    return Sampling(temperature=sp.temperature, top_p=sp.top_p, top_k=sp.top_k,
                    repeat_penalty=sp.repeat_penalty, seed=getattr(settings, "seed", None))


def _overall_badcases(d: Decision, s: CandidateSummary) -> float | None:
    if d.hybrid is not None:
        return d.hybrid.badcases_per_1000
    if d.team is not None:
        return d.team.badcases_per_1000
    parts = [(q.n or 0, q.badcases.value) for q in s.tasks.values() if q.badcases is not None]
    n = sum(k for k, _ in parts)
    return None if not n else sum(k * v for k, v in parts) / n * 1000


def write_deploy(path: str | Path, cfg: DeployConfig) -> tuple[Path, bool]:
    """(the path written, whether an existing file was replaced) — the caller says so."""
    path = Path(path)
    existed = path.exists()
    return cfg.dump(path), existed
