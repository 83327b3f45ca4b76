"""Re-selection on sampled traffic (seed 000 §7.4: production traffic is the
input of the next selection round). `edgepick run PLAN --traffic traffic.jsonl` and
`edgepick reselect DEPLOY.yaml --plan PLAN --traffic …` run the plan's candidates on the
sampled items, alone or mixed with the plan's own sets at a stated weight, into a folder of
their own (the plan's store is shared, so nothing measured before is measured again). The new
deploy.yaml is written beside the deployed one under a new name, never over it, and says what
changed from it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

from edgepick.errors import EdgepickError
from edgepick.evaluate.items import load_eval_set
from edgepick.evaluate.reference_free import SKIPPED, USED
from edgepick.plan.loader import LoadedPlan
from edgepick.plan.runner import run_plan
from edgepick.progress import RunDisplay
from edgepick.records.deploy import DeployConfig
from edgepick.units import whole_pct


@dataclass
class TrafficMix:
    traffic: Path
    weight: float | None  # share of traffic items in the mix; None: traffic alone
    traffic_items: int = 0
    original_items: int = 0
    notes: list[str] = field(default_factory=list)


def _count(path: str, limit: int | None) -> tuple[int, int, int]:
    """(usable items, items refused, usable items without a reference) of an eval set, as
    evaluate loads it."""
    items, problems = load_eval_set(path)
    n = len(items) if limit is None else min(limit, len(items))
    return n, len({p.line for p in problems}), sum(it.reference_free for it in items)


def with_traffic(lp: LoadedPlan, traffic: Path, weight: float | None,
                 out_dir: Path) -> tuple[LoadedPlan, TrafficMix]:
    """The plan with its eval data replaced by (or mixed with) the traffic items, writing into
    `out_dir` but keeping the plan's store."""
    traffic = traffic.resolve()
    if not traffic.is_file():
        raise EdgepickError(f"{traffic}: no such traffic file (written by `edgepick serve "
                            "--sample-out`)")
    if weight is not None and not 0 < weight <= 1:
        raise EdgepickError(f"--traffic-weight {weight}: expected a share in (0, 1]")
    mix = TrafficMix(traffic, None if weight == 1 else weight)
    n_t, refused, free = _count(str(traffic), None)
    if not n_t:
        raise EdgepickError(f"{traffic}: no sampled item can be evaluated ({refused} refused)")
    if free == n_t and mix.weight is None:
        raise EdgepickError(f"{traffic}: no sampled item has a reference, and scores need some: "
                            "mix it with the plan's own sets (--traffic-weight), serve with a "
                            "cloud, or fill them in")
    if refused:
        mix.notes.append(f"traffic: {refused} sampled item(s) with a bad line or reference were "
                         "left out")
    if free:
        mix.notes.append(f"traffic: {free} sampled item(s) without a reference count for "
                         f"{', '.join(USED)}, not for {', '.join(SKIPPED)}")
    specs = lp.eval_specs()
    if mix.weight is None:
        data: list = [{"set": str(traffic)}]
        mix.traffic_items = n_t
    else:
        sizes = [_count(s.set, s.limit)[0] for s in specs]
        n_o = sum(sizes)
        want_t = round(mix.weight / (1 - mix.weight) * n_o) if mix.weight < 1 else n_t
        if want_t <= n_t:  # enough traffic: all the original items, traffic cut to its share
            take_t, scale = max(want_t, 1), 1.0
        else:  # too little traffic: all of it, the original sets cut to keep the weight
            take_t = n_t
            scale = (n_t * (1 - mix.weight) / mix.weight) / n_o if n_o else 0.0
        data = [{"set": s.set, "limit": max(1, round(n * scale))} for s, n in zip(specs, sizes)]
        data.append({"set": str(traffic), "limit": take_t})
        mix.traffic_items = take_t
        mix.original_items = sum(d["limit"] for d in data[:-1])
        total = mix.traffic_items + mix.original_items
        mix.notes.append(f"traffic: {mix.traffic_items} sampled item(s) mixed with "
                         f"{mix.original_items} of the plan's own ({whole_pct(mix.traffic_items / total)}"
                         f" traffic, asked {whole_pct(mix.weight)})")
    plan = lp.plan.model_copy(deep=True)
    plan.eval.data = data
    plan.eval.limit = None
    plan.eval.enabled = True
    plan.store = str(lp.store_path)
    plan.output = str(out_dir.resolve())
    return dataclasses.replace(lp, plan=plan, _refs=dict(lp._refs)), mix


def changes(old: DeployConfig, new: DeployConfig) -> list[str]:
    """What the new choice changes from the deployed one, one line each."""
    out: list[str] = []
    if (old.model.name, old.model.sha256) != (new.model.name, new.model.sha256):
        out.append(f"model: {old.model.name} ({old.model.quant or '-'}) → {new.model.name} "
                   f"({new.model.quant or '-'})")
    if old.status != new.status:
        out.append(f"status: {old.status} → {new.status}")
    o_rt, n_rt = old.runtime.model_dump(), new.runtime.model_dump()
    for k in sorted(set(o_rt) | set(n_rt)):
        if o_rt.get(k) != n_rt.get(k):
            out.append(f"runtime.{k}: {o_rt.get(k)} → {n_rt.get(k)}")
    o_routes = {r.task: r.route for r in old.routes}
    n_routes = {r.task: r.route for r in new.routes}
    for task in sorted(set(o_routes) | set(n_routes)):
        if o_routes.get(task) != n_routes.get(task):
            out.append(f"route {task}: {o_routes.get(task, '-')} → {n_routes.get(task, '-')}")
    ob, nb = old.baseline.model_dump(), new.baseline.model_dump()
    for k in ("unacceptable_rate", "format_error_rate", "badcases_per_1000"):
        if ob.get(k) != nb.get(k) and (ob.get(k) is not None or nb.get(k) is not None):
            out.append(f"baseline.{k}: {_num(ob.get(k))} → {_num(nb.get(k))}")
    return out or ["nothing: the traffic confirms the deployed choice"]


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def beside(deployed: Path) -> Path:
    """A new name in the deployed file's folder: deploy-<UTC time>.yaml, never an existing one."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = deployed.with_name(f"{deployed.stem}-{stamp}{deployed.suffix or '.yaml'}")
    n = 1
    while path.exists():
        n += 1
        path = deployed.with_name(f"{deployed.stem}-{stamp}-{n}{deployed.suffix or '.yaml'}")
    return path


@dataclass
class Reselection:
    result: object  # plan.runner.RunResult
    mix: TrafficMix
    deployed: Path | None
    deploy: Path | None  # the new deploy.yaml, beside the deployed one
    changes: list[str]


def reselect(lp: LoadedPlan, traffic: Path, weight: float | None, deployed: Path | None,
             display: RunDisplay | None = None) -> Reselection:
    deployed = deployed or (lp.output / "deploy.yaml")
    old = DeployConfig.load(deployed) if deployed.is_file() else None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    run_lp, mix = with_traffic(lp, traffic, weight, lp.output / f"reselect-{stamp}")
    result = run_plan(run_lp, display)
    new_path: Path | None = None
    found: list[str] = []
    if result.deploy is not None:
        new = DeployConfig.load(result.deploy)
        found = changes(old, new) if old is not None else ["no deployed choice to compare with"]
        new.notes = [f"reselected on sampled traffic {mix.traffic}"
                     + (f" (weight {mix.weight:g})" if mix.weight else " (traffic alone)"),
                     *(f"changed from {deployed.name}: {c}" for c in found), *new.notes]
        new_path = beside(deployed) if old is not None else result.deploy
        new.dump(new_path)
    result.notes.extend(mix.notes)
    return Reselection(result, mix, deployed if old is not None else None, new_path, found)
