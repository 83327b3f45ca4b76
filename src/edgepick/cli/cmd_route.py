"""`edgepick route eval`: the edge and the cloud on your eval set, the quality-vs-cloud-share
curve of a confidence cascade, its calibrated threshold, cascade vs by-task vs random at equal
cloud share, and the edge/cloud consistency rate (docs/route.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from edgepick.cli.cmd_eval import demo_eval_path
from edgepick.cli.cmd_fidelity import _progress
from edgepick.cli.options import STORE_HELP, open_store
from edgepick.cli.output import console, err_console, print_json
from edgepick.errors import EdgepickError
from edgepick.evaluate.items import load_eval_set
from edgepick.inputs import resolve_ref
from edgepick.records.candidate import RuntimeSettings
from edgepick.report.route_section import (curve_rows, summary_lines, tier_lines, tier_table,
                                           write_route_report)
from edgepick.route import route_eval as stage
from edgepick.route.confidence import ConfidenceSettings
from edgepick.units import pct

route_app = typer.Typer(help="Edge–cloud routing: evaluate a cascade on your own data.",
                        no_args_is_help=True)


def _shares(text: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise EdgepickError(f"--shares: expected comma-separated fractions, got '{text}'") from None
    if not vals or any(not 0 < v < 1 for v in vals):
        raise EdgepickError(f"--shares: every share must lie strictly between 0 and 1, got '{text}'")
    return vals


def _print(res) -> None:
    for line in summary_lines(res, "en"):
        console.print(line, highlight=False)
    t = Table("cloud share", "quality", "escalate below", title="quality vs cloud share")
    for r in curve_rows(res):
        t.add_row(pct(r['cloud_share']), f"{r['quality']:.3f}",
                  "-" if r["threshold"] is None else f"{r['threshold']:.4f}")
    console.print(t)
    c = Table("cloud share", "vs", "cascade", "other", "diff", "95% CI", "verdict",
              title="cascade vs other routers at equal cloud share (paired bootstrap)")
    for x in res.comparisons:
        c.add_row(pct(x.cloud_share), x.other, f"{x.cascade:.3f}",
                  f"{x.other_quality:.3f}", f"{x.diff:+.3f}",
                  f"[{x.ci95[0]:+.3f}, {x.ci95[1]:+.3f}]", x.verdict)
    console.print(c)
    if res.tiered is not None:
        _print_tiers(res.tiered)
    gen = ", ".join(f"{k}: {v} generated" for k, v in res.generated.items())
    console.print(f"outputs: {gen} (the rest from the store)", highlight=False)


def _print_tiers(tr) -> None:
    for line in tier_lines(tr, "en"):
        console.print(line, highlight=False)
    _, rows = tier_table(tr, "en")
    t = Table("cloud at most", "keep at conf ≥", "answered per tier", "cascade", "random",
              "diff", "95% CI", "verdict",
              title="cascade over tiers vs random at equal shares (held out, paired bootstrap)")
    for r in rows:
        t.add_row(*r)
    console.print(t)


@route_app.command("eval")
def route_eval(
    edge: list[str] = typer.Option(
        ..., "--edge", "-e", help="edge model: GGUF, bundled name or http://host:port/v1#name; "
        "repeat for a cascade over tiers, smallest first (small → medium → cloud)"),
    cloud: str = typer.Option(..., "--cloud", "-c", help="cloud model, same forms"),
    cloud_key_env: Optional[str] = typer.Option(
        None, "--cloud-key-env", metavar="VAR",
        help="environment variable holding the cloud endpoint's API key (never stored)"),
    data: Optional[str] = typer.Option(None, "--data", "-d",
                                       help="eval set JSONL (default: the bundled demo set)"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="first N valid items"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP + "; outputs "
                                        "already stored there (by eval or route eval) are reused"),
    method: str = typer.Option("mean", "--confidence",
                               help="edge confidence from token log-probs: mean, min, first_k"),
    first_k: int = typer.Option(8, "--first-k", min=1, help="tokens for --confidence first_k"),
    target_share: Optional[float] = typer.Option(
        None, "--target-share", min=0.0, max=1.0,
        help="calibrate the threshold to send this share of requests to the cloud"),
    target_quality: Optional[float] = typer.Option(
        None, "--target-quality", min=0.0, max=1.0,
        help="calibrate the threshold for the smallest cloud share reaching this quality"),
    shares: str = typer.Option("0.1,0.2,0.3,0.5", "--shares",
                               help="cloud shares at which routers are compared"),
    threads: int = typer.Option(2, "--threads", help="inference threads (in-process models)"),
    ctx: int = typer.Option(2048, "--ctx", help="context length (in-process models)"),
    edge_only: Optional[list[str]] = typer.Option(
        None, "--edge-only", help="a task type that never leaves the device (repeatable; "
                                  "as deploy.yaml's edge_only_tasks): never escalated, "
                                  "left out of the cloud share"),
    router_model: Optional[str] = typer.Option(
        None, "--router-model", help="a small model that names each request's task type "
        "before any tier answers: its accuracy on these items, per task"),
    out: Optional[Path] = typer.Option(None, "--out",
                                       help="write route.en.md/html, the chart and JSON here"),
    json_out: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Quality against cloud share of an edge→cloud cascade on an eval set: the curve and
    its calibrated threshold.

    With the router comparison and the edge/cloud consistency rate. Several --edge give a
    cascade over tiers: each step's threshold calibrated on half the items, judged on the
    other half against random assignment at the same shares."""
    if target_share is not None and target_quality is not None:
        raise EdgepickError("give --target-share or --target-quality, not both")
    if method not in ("mean", "min", "first_k"):
        raise EdgepickError(f"--confidence must be mean, min or first_k, got '{method}'")
    path = data or demo_eval_path()
    items, problems = load_eval_set(path)
    for p in problems:
        err_console.print(f"[yellow]skipped:[/] {p}", highlight=False, soft_wrap=True)
    free = sum(it.reference_free for it in items)
    if free:  # routing judges edge and cloud answers right or wrong: it needs the reference
        err_console.print(f"[yellow]skipped:[/] {free} item(s) without a reference",
                          highlight=False)
        items = [it for it in items if not it.reference_free]
    if not items:
        raise EdgepickError(f"{path}: no valid items to evaluate")
    items = items[:limit] if limit else items
    if len(set(edge)) != len(edge):
        raise EdgepickError(f"--edge: each tier once, got {', '.join(edge)}")
    tiers = [resolve_ref(e) for e in edge]
    req = stage.RouteEvalRequest(
        items=items, data=path, edge=tiers[0], tiers=tiers[1:],
        cloud=resolve_ref(cloud, api_key_env=cloud_key_env),
        settings=RuntimeSettings(threads=threads, n_ctx=ctx),
        confidence=ConfidenceSettings(method=method, k=first_k),
        target_share=target_share, target_quality=target_quality, shares=_shares(shares),
        edge_only_tasks=list(edge_only or []),
        router_model=resolve_ref(router_model) if router_model else None)
    with open_store(store, path) as rs, _progress(not json_out) as cb:
        res = stage.run(req, rs, cb)
    if out:
        for p in write_route_report(res, out):
            err_console.print(f"wrote {p}", highlight=False)
    if json_out:
        print_json(res)
        return
    _print(res)


def register(app: typer.Typer) -> None:
    app.add_typer(route_app, name="route")
