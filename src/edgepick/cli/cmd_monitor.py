"""`edgepick monitor URL [--against DEPLOY.yaml]`: live figures of a running server (seed 000
§7.4)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from edgepick.cli.output import console, human_bytes, print_json


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "bytes":
        return human_bytes(value)
    if unit == "rate":
        return f"{value:.1%}"
    if unit == "count":
        return f"{value:.0f}"
    return f"{value:.1f} {unit}"


def register(app: typer.Typer) -> None:
    @app.command()
    def monitor(
        url: str = typer.Argument(..., help="the server, e.g. http://127.0.0.1:8080"),
        against: Optional[Path] = typer.Option(None, "--against",
                                               help="deploy.yaml whose baseline to compare with"),
        json_out: bool = typer.Option(False, "--json", help="print JSON"),
        watch: Optional[float] = typer.Option(None, "--watch",
                                              help="refresh every N seconds until Ctrl-C"),
        api_key: Optional[str] = typer.Option(None, "--api-key",
                                              help="the server's key (env EDGEPICK_API_KEY)"),
    ) -> None:
        """TTFT P50/P99, decode tok/s P5, engine memory, restarts, error and rejection rates, and
        the unacceptable and format-error rates of sampled outputs, each against the deploy
        baseline (sampling is opt-in: `edgepick serve --sample-rate`)."""
        from edgepick.monitor.live import as_dicts, figures, scrape
        from edgepick.records.deploy import DeployConfig

        baseline = DeployConfig.load(against).baseline if against else None
        key = api_key or os.environ.get("EDGEPICK_API_KEY")
        while True:
            rows = figures(scrape(url, key), baseline)
            if json_out:
                print_json({"url": url, "against": str(against) if against else None,
                            "figures": as_dicts(rows)})
            else:
                t = Table("figure", "live", "95% interval", "n", "baseline", "verdict",
                          title=f"{url} at {time.strftime('%H:%M:%S')}")
                for r in rows:
                    interval = (f"{_fmt(r.low, r.unit)} – {_fmt(r.high, r.unit)}"
                                if r.low is not None else "")
                    t.add_row(r.figure, _fmt(r.live, r.unit), interval,
                              "" if r.n is None else str(r.n), _fmt(r.baseline, r.unit), r.verdict)
                console.print(t)
            if not watch:
                return
            time.sleep(watch)
