"""`edgepick monitor URL [--against DEPLOY.yaml] [--window 5m] [--check]`: live figures of a
running server over a recent window (seed 000 §7.4)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from edgepick.cli.output import console, human_bytes, print_json
from edgepick.errors import EdgepickError
from edgepick.monitor.doctor_hint import doctor_commands
from edgepick.monitor.drift import as_dicts as drift_dicts, drift
from edgepick.monitor.live import as_dicts, figures, scrape_window
from edgepick.monitor.window import parse_window
from edgepick.records.deploy import DeployConfig
from edgepick.units import pct


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "bytes":
        return human_bytes(value)
    if unit == "rate":
        return pct(value)
    if unit == "count":
        return f"{value:.0f}"
    if unit == "/h":
        return f"{value:.2f}/h"
    return f"{value:.1f} {unit}"


def register(app: typer.Typer) -> None:
    @app.command()
    def monitor(
        url: str = typer.Argument(..., help="the server, e.g. http://127.0.0.1:8080"),
        against: Optional[Path] = typer.Option(None, "--against",
                                               help="deploy.yaml whose baseline to compare with"),
        window: str = typer.Option("5m", "--window",
                                   help="figures over the last DURATION (5m, 90s, 1h) from the "
                                        "change of each counter and bucket, as Prometheus' "
                                        "rate does; 'since-start' for everything since start"),
        check: bool = typer.Option(False, "--check",
                                   help="exit 1 when a figure is worse than the baseline "
                                        "(judged on its interval) or the traffic drifted from "
                                        "the decision (needs --against), and print the "
                                        "doctor command for each"),
        json_out: bool = typer.Option(False, "--json", help="print JSON"),
        watch: Optional[float] = typer.Option(None, "--watch",
                                              help="refresh every N seconds until Ctrl-C"),
        api_key: Optional[str] = typer.Option(None, "--api-key",
                                              help="the server's key (env EDGEPICK_API_KEY)"),
    ) -> int:
        """Live figures of a running `edgepick serve` against its deploy.yaml's gates; --check
        exits 1 when one fails (for CI and cron) and names the `edgepick doctor` command that
        finds the cause.

        TTFT P50/P99, decode tok/s P5, engine memory and its peak, availability, restarts,
        crashes, OOM kills, error, rejection and user-feedback rates, and the unacceptable,
        badcase and format-error rates of sampled outputs (per task too), each against the
        deploy baseline; with --against, whether the traffic still looks like the evaluation
        (sampling is opt-in: `edgepick serve --sample-rate`)."""
        try:
            window_s = parse_window(window)
        except ValueError as exc:
            raise EdgepickError(f"--window: {exc}") from None
        if check and against is None:
            raise EdgepickError("--check compares with a deploy.yaml: give --against DEPLOY.yaml")
        deploy = DeployConfig.load(against) if against else None
        key = api_key or os.environ.get("EDGEPICK_API_KEY")
        while True:
            s, win = scrape_window(url, key, window_s)
            rows = figures(s, deploy=deploy)
            found = drift(s, deploy) if deploy else []
            worse = [r.figure for r in rows if r.verdict == "worse"] + \
                [f.what for f in found if f.drift]
            hints = doctor_commands(worse, str(against) if against else None)
            if json_out:
                print_json({"url": url, "against": str(against) if against else None,
                            "window": {"asked": window, "asked_s": win.asked_s,
                                       "used_s": win.used_s, "since_start": win.since_start},
                            "figures": as_dicts(rows), "drift": drift_dicts(found),
                            "worse": worse, "doctor": hints})
            else:
                t = Table("figure", "live", "95% interval", "n", "baseline", "verdict",
                          title=f"{url} at {time.strftime('%H:%M:%S')}, {win.describe()}")
                for r in rows:
                    interval = (f"{_fmt(r.low, r.unit)} – {_fmt(r.high, r.unit)}"
                                if r.low is not None else "")
                    t.add_row(r.figure, _fmt(r.live, r.unit), interval,
                              "" if r.n is None else str(r.n), _fmt(r.baseline, r.unit), r.verdict)
                console.print(t)
                for f in found:
                    mark = "[red]drift[/]" if f.drift else "ok"
                    console.print(f"{mark} {f.what}: live {f.live}, decided {f.decided}"
                                  + (f" ({f.note})" if f.note else ""), highlight=False)
                if check:
                    console.print(f"check: {len(worse)} figure(s) worse: {', '.join(worse)}"
                                  if worse else "check: nothing worse than the decision",
                                  highlight=False)
                    for cmd in hints:  # what finds the cause (docs/doctor.md)
                        console.print(f"to find the cause: {cmd}", highlight=False)
            if not watch:
                return 1 if check and worse else 0
            time.sleep(watch)
