"""`edgepick alerts DEPLOY.yaml --out rules.yaml`: Prometheus alerting rules from the deploy's
gates, for the operator's own Prometheus; check them with `promtool check rules`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from edgepick.cli.output import console
from edgepick.errors import EdgepickError
from edgepick.monitor.alerts import AlertSettings, rules_yaml
from edgepick.monitor.window import parse_window
from edgepick.records.deploy import DeployConfig


def register(app: typer.Typer) -> None:
    @app.command()
    def alerts(
        deploy: Path = typer.Argument(..., help="the deploy.yaml whose gates become alerts"),
        out: Optional[Path] = typer.Option(None, "--out", "-o",
                                           help="rules file to write [default: print it]"),
        window: str = typer.Option("5m", "--window", metavar="DURATION",
                                   help="rate() range of the latency and error rules"),
        quality_window: str = typer.Option("30m", "--quality-window", metavar="DURATION",
                                           help="range of the sampled-output rates"),
        hold: str = typer.Option("5m", "--for", metavar="DURATION",
                                 help="how long a figure must stay bad"),
        min_sampled: int = typer.Option(20, "--min-sampled", min=1,
                                        help="sampled outputs needed before a quality alert"),
        force: bool = typer.Option(False, "--force", help="replace an existing --out file"),
    ) -> None:
        """Write Prometheus alerting rules from a deploy.yaml's gates (check them with promtool).

        TTFT P50/P99 and decode P5 via histogram_quantile, engine memory, sampled
        unacceptable and format-error rates, 5xx and rejection rates, not-ready and OOM."""
        for flag, value in (("--window", window), ("--quality-window", quality_window),
                            ("--for", hold)):
            try:
                if parse_window(value) is None:
                    raise ValueError(f"'{value}' is not a duration")
            except ValueError as exc:
                raise EdgepickError(f"{flag}: {exc}") from None
        cfg = DeployConfig.load(deploy)
        text = rules_yaml(cfg, AlertSettings(window=window, quality_window=quality_window,
                                             hold=hold, min_sampled=min_sampled))
        if out is None:
            typer.echo(text, nl=False)
            return
        if out.exists() and not force:
            raise EdgepickError(f"{out} exists; give --force to replace it")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        console.print(f"alerting rules: {out} (check: promtool check rules {out})",
                      highlight=False)
