"""Does the evaluation still represent the traffic? The live window's
unacceptable rate, task mix and prompt lengths set against what the decision assumed: its
intervals (deploy.yaml gates and per-task routes) and its scenario's context distribution.
A finding is drift only when the live interval clears the decided one, never on a point value.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from edgepick.evaluate.intervals import wilson
from edgepick.monitor.live import Scrape, quantile, tasks_of
from edgepick.records.deploy import DeployConfig
from edgepick.units import pct

LENGTH_TOLERANCE = 1.2  # live prompt P95 this many times the scenario's is drift


@dataclass
class Finding:
    what: str
    live: str
    decided: str
    drift: bool
    note: str = ""


def _unacceptable_gate(deploy: DeployConfig) -> tuple[float | None, float | None, float | None]:
    for g in deploy.gates:
        if "unacceptable" in g.metric:
            return g.value, g.low, g.high
    return deploy.baseline.unacceptable_rate, None, None


def drift(s: Scrape, deploy: DeployConfig) -> list[Finding]:
    out: list[Finding] = []
    sampled = int(s.total("edgepick_sampled_outputs_total"))
    bad = int(s.total("edgepick_sampled_outputs_total", verdict="unacceptable"))
    value, low, high = _unacceptable_gate(deploy)
    if sampled and value is not None:
        lo, hi = wilson(bad, sampled)
        top = high if high is not None else value
        out.append(Finding("unacceptable rate", f"{pct(bad / sampled)} [{pct(lo)}, {pct(hi)}] "
                           f"of {sampled}", f"{pct(value)}" + (f" [{pct(low)}, {pct(high)}]"
                                                                 if low is not None else ""),
                           lo > top, "the live interval is above the decision's"
                           if lo > top else ""))
    shares = {r.task: r.share for r in deploy.routes if r.share is not None}
    by_task = {t: int(s.total("edgepick_sampled_task_outputs_total", task=t)) for t in tasks_of(s)}
    n = sum(by_task.values())
    for task, k in sorted(by_task.items()):
        lo, hi = wilson(k, n)
        decided = shares.get(task)
        if decided is None:
            unseen = bool(shares) and k > 0
            out.append(Finding(f"task mix: {task}", f"{pct(k / n)} of {n}",
                               "not in the decision" if shares else "unmeasured", unseen,
                               "traffic the evaluation set has no items for" if unseen else ""))
            continue
        moved = lo > decided or hi < decided
        out.append(Finding(f"task mix: {task}", f"{pct(k / n)} [{pct(lo)}, {pct(hi)}] of {n}",
                           pct(decided), moved,
                           "the traffic's mix is not the evaluation's" if moved else ""))
    out.extend(_lengths(s, deploy))
    return out


def _scenario_lengths(deploy: DeployConfig) -> dict[str, dict]:
    """The decision's context_tokens and output_tokens ({p50, p95, …}), as deploy.yaml carries
    them (a deploy written before it carried them gives no length to compare with)."""
    return {field: v for field in ("context_tokens", "output_tokens")
            if (v := getattr(deploy, field)) is not None}


def _lengths(s: Scrape, deploy: DeployConfig) -> list[Finding]:
    """Live prompt and answer lengths (P95 over the window) against the scenario's."""
    found = []
    want = _scenario_lengths(deploy)
    for metric, field, what in (("edgepick_prompt_tokens", "context_tokens", "prompt"),
                                ("edgepick_completion_tokens", "output_tokens", "answer")):
        buckets = s.buckets(metric)
        p95 = quantile(0.95, buckets) if buckets else None
        if p95 is None:
            continue
        decided = (want.get(field) or {}).get("p95")
        if decided is None:
            found.append(Finding(f"{what} tokens P95", f"{p95:.0f}", "unmeasured", False,
                                 f"the decision's scenario gives no {field}"))
            continue
        moved = p95 > decided * LENGTH_TOLERANCE
        found.append(Finding(f"{what} tokens P95", f"{p95:.0f}", f"{decided:.0f}", moved,
                             f"{what}s are longer than the evaluation assumed" if moved else ""))
    return found


def as_dicts(found: list[Finding]) -> list[dict]:
    return [asdict(f) for f in found]
