"""`edgepick runs`: every invocation recorded in a results store, newest last (docs/decide.md)."""

from __future__ import annotations

import time

import typer
from rich.table import Table

from edgepick.cli.options import STORE_HELP
from edgepick.cli.output import console, print_json
from edgepick.store import ResultStore


def register(app: typer.Typer) -> None:
    @app.command()
    def runs(store: str = typer.Option(None, "--store", help=STORE_HELP),
             json_out: bool = typer.Option(False, "--json", help="print JSON")) -> None:
        """List the runs in a results store, for `decide --run` and `report --run`.

        Each run's id, time, command and what it stored or reused."""
        with ResultStore(store or None, must_exist=True) as rs:
            found = rs.runs()
            version = rs.schema_version
        if json_out:
            print_json(found)
            return
        t = Table("run", "when (UTC)", "command", "rows", "data",
                  title=f"{rs.path}: {len(found)} runs, schema {version}")
        for r in found:
            rows = ", ".join(f"{k} {n}" for k, n in sorted(r.rows.items())) or "-"
            t.add_row(str(r.id), time.strftime("%Y-%m-%d %H:%M", time.gmtime(r.created)),
                      r.command, rows, (r.data_sha256 or "-")[:12])
        console.print(t)
