"""`edgepick models pull REF`: a GGUF where it lives, downloaded into the registry as a version
(resumable, verified against the hub's SHA-256 and the header read before, atomic).
`edgepick models host FILE…`: model files served on 127.0.0.1 with range requests, a local
stand-in for a hub's CDN (try a remote reference without a network)."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Optional

import typer
from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                           TransferSpeedColumn)

from edgepick.cli.cmd_models import RegistryOpt, _root, models_app
from edgepick.cli.output import console, err_console, human_bytes
from edgepick.cli.remote_text import say_remote
from edgepick.errors import EdgepickError
from edgepick.inputs import resolve_ref
from edgepick.inputs.remote import is_remote, token_for
from edgepick.models.file_server import file_server
from edgepick.monitor.window import parse_window
from edgepick.progress import ProgressEvent
from edgepick.registry.pull import pull
from edgepick.registry.store import Registry


def register(app: typer.Typer) -> None:
    @models_app.command("pull")
    def pull_cmd(ref: str = typer.Argument(..., help="https://…/FILE.gguf or "
                                           "hf:ORG/REPO/FILE.gguf[@REVISION] (HF_ENDPOINT, "
                                           "HF_TOKEN)"),
                 name: Optional[str] = typer.Option(None, "--name", help="model name "
                                                    "[default: the file's name]"),
                 version: Optional[str] = typer.Option(None, "--version", help="version label "
                                                       "[default: the SHA-256's first 12 digits]"),
                 registry: RegistryOpt = None) -> None:
        """Download a remote GGUF into the registry as a new version.

        Its header is read first (from the cache when fit or inspect read it); the download
        resumes where a cut or killed pull stopped, and the file joins the registry only once its
        SHA-256 matches the hub's (where the hub gives one) and its header the one read."""
        if not is_remote(ref):
            raise EdgepickError(f"{ref}: expected a URL of a .gguf file or an hf: reference; "
                                "`edgepick models add FILE` adds a file on disk")
        model = resolve_ref(ref, remote_ok=True)
        say_remote([model])
        part = model.remote.parts[0]
        version = version or (part.sha256 or hashlib.sha256(part.identity.encode()).hexdigest())[:12]
        name = name or model.label
        token = token_for(ref)
        reg = Registry(_root(registry), create=True)
        columns = (TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                   TransferSpeedColumn(), TimeRemainingColumn())
        with Progress(*columns, console=err_console, transient=True) as prog:
            task = prog.add_task(f"{name}@{version}", total=model.remote.size)

            def tick(ev: ProgressEvent) -> None:
                prog.update(task, completed=ev.done, total=ev.total)

            ve = pull(reg, model, name, version, progress=tick,
                      headers={"Authorization": f"Bearer {token}"} if token else None)
        checked = "the hub's SHA-256 and the header" if part.sha256 else "the header read"
        console.print(f"pulled {name}@{version} ({human_bytes(ve.size)}, sha256 "
                      f"{ve.sha256[:12]}…, checked against {checked}) into {reg.root}")

    @models_app.command("host")
    def host(models: list[str] = typer.Argument(..., help="GGUF files or bundled names"),
             port: int = typer.Option(0, "--port", help="port on 127.0.0.1 [default: a free "
                                      "one]"),
             for_: Optional[str] = typer.Option(None, "--for", metavar="DURATION",
                                                help="stop after this long (90s, 5m, 1h) "
                                                "[default: until Ctrl-C]")) -> None:
        """Serve model files on 127.0.0.1 with range requests: a local stand-in for a hub.

        Prints one URL per file; `fit -m URL` and `inspect -m URL` then read the header as
        they would from a hub, and `models pull URL` downloads it."""
        files: dict[str, Path] = {}
        for m in models:
            path = resolve_ref(m).local_path("only a file on disk can be hosted")
            if not os.path.isfile(path):
                raise EdgepickError(f"{m}: not a file")
            files.setdefault(os.path.basename(path), Path(path))
        limit = parse_window(for_) if for_ else None
        if for_ and limit is None:
            raise EdgepickError(f"--for: expected a duration such as 90s, 5m or 1h, got {for_}")
        with file_server(files, port) as srv:
            for url in srv.urls():
                console.print(url, highlight=False, soft_wrap=True)
            err_console.print(f"[dim]serving {len(files)} file(s) on {srv.url}"
                              + (f" for {for_}" if for_ else "; Ctrl-C stops") + "[/]")
            try:
                time.sleep(limit) if limit else _forever()
            except KeyboardInterrupt:
                pass
        err_console.print(f"[dim]served {len(srv.seen)} request(s), "
                          f"{human_bytes(srv.sent)}[/]")


def _forever() -> None:
    while True:
        time.sleep(3600)
