"""The operator's page, `/ui`, and the one endpoint it reads, `/ui/status`.

The page (data/status_page.html) is one static file: no build step, no external asset, so it
works offline on a device. It holds no data and no secret, so it is served without the key;
everything it shows comes from `/ui/status` (and its chat box from `/v1/chat/completions`),
which need the API key when one is set: the operator types it into the page, which keeps it in
the tab's sessionStorage and sends it as `Authorization: Bearer`. Without it the page gets
nothing.

`/ui/status` is what `edgepick monitor` shows, computed in serve from its own registry: the
models, resident or known, with their memory against the budget; the live figures over the
monitor's window (its snapshot from serve/loop/history.py) against deploy.yaml's baseline
(monitor/live.py's `figures`, the same rows and verdicts); route shares and cascade
escalations over that window; the last restarts, loads and unloads; and the alerts (a figure
worse than its baseline, a degraded or unready engine)."""

from __future__ import annotations

import time
from importlib.resources import files

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from prometheus_client import generate_latest

from edgepick.monitor.live import as_dicts, figures, parse
from edgepick.serve.http.ollama import catalog
from edgepick.serve.http.request_checks import check_key
from edgepick.serve.http.state import ServeState

WINDOW_S = 300.0  # `edgepick monitor`'s default window
PAGE = "status_page.html"


def _budget(state: ServeState) -> int | None:
    residency = getattr(state.pool, "residency", None)
    if residency is not None:
        return residency.budget
    memory = getattr(state.deploy, "memory", None)
    return getattr(memory, "budget_bytes", None)


def _by(scrape, name: str, *labels: str) -> list[dict]:
    out: dict[tuple, float] = {}
    for got, value in scrape.labelled(name):
        key = tuple(got.get(k, "") for k in labels)
        out[key] = out.get(key, 0.0) + value
    return [dict(zip(labels, k), count=v) for k, v in sorted(out.items()) if v]


def status(state: ServeState, window_s: float) -> dict:
    now = parse(generate_latest(state.metrics.registry).decode())
    scrape, age = now, None
    if state.history is not None:
        age, text = state.history.at(window_s)
        scrape = now.since(parse(text))
    rows = as_dicts(figures(scrape, deploy=state.deploy))
    models = []
    for s in catalog.served(state.pool):
        models.append({"name": s.name, "state": s.state, "bytes": s.size, "pinned": s.pinned,
                       "embedding": s.embedding, "ttl_s": s.ttl,
                       # a ttl's end; none while pinned or until the budget evicts it
                       "expires_at": catalog.expires_at(s) if s.state == "loaded"
                       and s.ttl is not None and not s.pinned else None,
                       "version": s.spec.version})
    resident = sum(m["bytes"] for m in models if m["state"] == "loaded")
    pool = state.pool
    alerts = [f"{r['figure']}: {r['live']:.4g} {r['unit']} is worse than the deploy's "
              f"{r['baseline']:.4g}" for r in rows if r["verdict"] == "worse"]
    if pool.degraded:
        alerts.append(f"degraded: {pool.degraded}")
    if not pool.ready:
        alerts.append(f"not ready: {pool.status}")
    routes = _by(scrape, "edgepick_routes_total", "route")
    total = sum(r["count"] for r in routes)
    for r in routes:
        r["share"] = r["count"] / total if total else None
    return {"time": time.time(), "ready": pool.ready, "status": pool.status,
            "window": {"asked_s": window_s, "used_s": age,
                       "since_start": age is None or age < window_s - 1},
            "memory": {"budget_bytes": _budget(state), "resident_bytes": resident},
            "models": models, "figures": rows, "routes": routes,
            "escalations": _by(scrape, "edgepick_cascade_escalations_total", "step", "model",
                               "reason"),
            "restarts": _by(now, "edgepick_engine_restarts_total", "reason"),
            "events": [{"time": t, "kind": k, "text": x}
                       for t, k, x in reversed(state.metrics.events)],
            "alerts": alerts}


def status_router(state: ServeState) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    page = files("edgepick").joinpath("data", PAGE).read_text(encoding="utf-8")

    @router.get("/ui")
    async def ui() -> Response:
        # no data in it: everything it shows is fetched with the key the operator types
        return HTMLResponse(page, headers={"Cache-Control": "no-store",
                                           "Content-Security-Policy": CSP,
                                           "X-Content-Type-Options": "nosniff",
                                           "Referrer-Policy": "no-referrer"})

    @router.get("/ui/status")
    async def ui_status(request: Request,
                        window: float = Query(WINDOW_S, ge=0, le=7 * 86400)) -> Response:
        check_key(request, state.settings.api_key)
        return JSONResponse(status(state, window), headers={"Cache-Control": "no-store"})

    return router


# the page's own script and style only, and requests to this server only
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
       "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'")
