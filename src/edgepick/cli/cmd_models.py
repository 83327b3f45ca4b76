"""`edgepick models …`: the model registry — add, list, remove, activate, rollback (seed 001
§6.4). See docs/registry.md."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated, Optional

import httpx
import typer
from rich.table import Table

from edgepick.cli.cmd_fidelity import _progress
from edgepick.cli.cmd_update import package_from
from edgepick.cli.output import console, human_bytes, print_json
from edgepick.errors import EdgepickError
from edgepick.evaluate.eval_sets import DataSpec, bundled_set_path, load_sets
from edgepick.records.deploy import DeployConfig
from edgepick.records.update import UpdatePolicy
from edgepick.registry.activation import activate as do_activate, rollback as do_rollback
from edgepick.registry.install import install
from edgepick.registry.store import Registry, split_versioned_ref
from edgepick.serve.engine.check import check_engine
from edgepick.yaml_input import read_yaml_mapping, validate_input

models_app = typer.Typer(help="The model registry: versions verified by SHA-256, activate, "
                              "rollback (docs/registry.md).", no_args_is_help=True)

REGISTRY_HELP = "registry directory (env EDGEPICK_REGISTRY; default ./edgepick-registry)"
SERVER_HELP = ("a running `edgepick serve` (http://host:port): switch it live; without it, the "
               "version is started once to prove it loads, then recorded as active")
RegistryOpt = Annotated[Optional[Path], typer.Option("--registry", help=REGISTRY_HELP)]
ServerOpt = Annotated[Optional[str], typer.Option("--server", help=SERVER_HELP)]
ApiKeyOpt = Annotated[Optional[str],
                      typer.Option("--api-key", help="the server's key (env EDGEPICK_API_KEY)")]


def _root(registry: Optional[Path]) -> Path:
    return registry or Path(os.environ.get("EDGEPICK_REGISTRY", "edgepick-registry"))


def _switch_live(server: str, action: str, payload: dict, api_key: Optional[str]) -> None:
    """Ask a running server to switch, and say what it switched from and to."""
    out = _server_call(server, action, payload, api_key)
    console.print(f"{server}: {payload['name']} {out.get('from') or '-'} → {out['to']}")


def _server_call(server: str, action: str, payload: dict, api_key: Optional[str]) -> dict:
    key = api_key or os.environ.get("EDGEPICK_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = server.rstrip("/").removesuffix("/v1") + f"/admin/models/{action}"
    try:
        resp = httpx.post(url, json=payload, headers=headers, timeout=300)
    except httpx.HTTPError as exc:
        raise EdgepickError(f"{url}: {exc}") from None
    data = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else {}
    if resp.status_code != 200:
        msg = (data.get("error") or {}).get("message") if isinstance(data, dict) else None
        raise EdgepickError(f"{server} refused: {msg or resp.text[:200]}")
    return data


@models_app.command("add")
def add(file: Path = typer.Argument(..., help="the model file (GGUF)"),
        name: str = typer.Option(..., "--name", help="model name"),
        version: str = typer.Option(..., "--version", help="version label, e.g. 2 or q4"),
        adapter: Optional[Path] = typer.Option(None, "--adapter", help="a LoRA adapter GGUF the "
                                               "version runs with (checked, pinned by SHA-256)"),
        adapter_scale: float = typer.Option(1.0, "--adapter-scale", help="the adapter's scale"),
        registry: RegistryOpt = None) -> None:
    """Copy a model file (and its adapter) into the registry and record their SHA-256."""
    ve = Registry(_root(registry), create=True).add(file, name, version, adapter, adapter_scale)
    lora = f", adapter sha256 {ve.adapter.sha256[:12]}…" if ve.adapter else ""
    console.print(f"added {name}@{version} ({human_bytes(ve.size)}, sha256 {ve.sha256[:12]}…"
                  f"{lora})")


@models_app.command("list")
def list_(registry: RegistryOpt = None,
          json_out: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """The registry's models, their versions and which one is active."""
    state = Registry(_root(registry)).state()
    if json_out:
        print_json(state)
        return
    t = Table("model", "version", "state", "size", "sha256", "added")
    for name, entry in state.models.items():
        for v, ve in entry.versions.items():
            mark = "active" if v == entry.active else (
                "previous" if entry.history and v == entry.history[-1] else "")
            if v == entry.pending:
                mark += " (unfinished activation)"
            t.add_row(name, v, mark, human_bytes(ve.size), ve.sha256[:12] + "…", ve.added)
    console.print(t)


@models_app.command("history")
def history(name: str = typer.Argument(..., help="NAME"), registry: RegistryOpt = None,
            json_out: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """What happened to a model, oldest first: versions added or built from an update, probes,
    activations, rollbacks (a canary's with the figure that was worse), canary windows."""
    entry = Registry(_root(registry)).model(name)
    if json_out:
        print_json(entry.events)
        return
    t = Table("when", "action", "version", "detail")
    for e in entry.events:
        t.add_row(e.when, e.action, e.version, e.detail)
    console.print(t)
    if entry.canary:
        console.print(f"canary open: {entry.canary.version} watched, {entry.canary.previous} kept")


@models_app.command("remove")
def remove(ref: str = typer.Argument(..., help="NAME@VERSION"), registry: RegistryOpt = None) -> None:
    """Delete a version that is not active (its file too)."""
    name, version = split_versioned_ref(ref)
    Registry(_root(registry)).remove(name, version)
    console.print(f"removed {name}@{version}")


@models_app.command("activate")
def activate(ref: str = typer.Argument(..., help="NAME@VERSION"), registry: RegistryOpt = None,
             server: ServerOpt = None, api_key: ApiKeyOpt = None) -> None:
    """Verify the SHA-256, start the version, and switch to it once healthy; the old version
    stays on disk. A checksum mismatch is refused and the active version stays."""
    name, version = split_versioned_ref(ref)
    if server:
        _switch_live(server, "activate", {"name": name, "version": version}, api_key)
        return
    reg = Registry(_root(registry))

    async def start(path: str) -> None:
        await check_engine(path, name, version)

    before = asyncio.run(do_activate(reg, name, version, start))
    console.print(f"{name}: {before or '-'} → {version} (active)")


@models_app.command("rollback")
def rollback(name: str = typer.Argument(..., help="NAME"), registry: RegistryOpt = None,
             server: ServerOpt = None, api_key: ApiKeyOpt = None) -> None:
    """Go back to the version that was active before."""
    if server:
        _switch_live(server, "rollback", {"name": name}, api_key)
        return

    async def start(version: str, path: str) -> None:
        await check_engine(path, name, version)

    before, after = asyncio.run(do_rollback(Registry(_root(registry)), name, start))
    console.print(f"{name}: {before} → {after} (active)")


def _probe_table(result) -> Table:
    t = Table("check", "value", "limit", "verdict", "detail",
              title=f"probe against {result.against} ({result.tokens} tokens scored, "
                    f"{result.seconds:.1f} s)")
    for c in result.checks:
        t.add_row(c.name, f"{c.value:.4g}", f"{c.limit:.4g}", "pass" if c.passed else "FAIL",
                  c.detail)
    return t


@models_app.command("update")
def update(name: str = typer.Argument(..., help="NAME of the model in the registry"),
           package: Optional[Path] = typer.Argument(None, help="the update package (or --from URL)"),
           url: Optional[str] = typer.Option(None, "--from", help="fetch the package over "
                                             "HTTP(S), resuming a cut-off download"),
           sha256: Optional[str] = typer.Option(None, "--sha256",
                                                help="the package's expected SHA-256 (with --from)"),
           version: Optional[str] = typer.Option(None, "--version", help="label of the new "
                                                 "version (default: its SHA-256's first 12 digits)"),
           deploy: Optional[Path] = typer.Option(None, "--deploy", help="deploy.yaml: its "
                                                 "update: limits and format checks on its items"),
           threads: int = typer.Option(2, "--threads", help="inference threads for the probe"),
           registry: RegistryOpt = None, server: ServerOpt = None,
           api_key: ApiKeyOpt = None) -> None:
    """Apply an update package into a new version, probe it against the active version (KLD,
    top-1 and, with --deploy, format checks), and activate it only if the probe holds; the probe
    is recorded with the version. With --server the running server switches and watches the new
    version for the canary window, rolling back by itself if it serves worse."""
    policy = _update_policy(deploy) if deploy else UpdatePolicy()
    if deploy is not None:  # files named in deploy.yaml are relative to its folder
        policy = policy.model_copy(update={
            k: str(deploy.parent / v) for k in ("reference", "text", "items")
            if (v := getattr(policy, k)) and not Path(v).is_absolute()
            and (k != "items" or not bundled_set_path(v))})
    reg = Registry(_root(registry))
    reg.model(name)  # a wrong name or registry is refused before anything is fetched
    pkg = package_from(package, url, sha256)
    with _progress(True) as tick:
        done = install(reg, name, pkg, version, policy, format_checks=deploy is not None,
                       threads=threads, progress=tick)
    console.print(f"{name}@{done.version}: {'already built' if done.reused else 'built'} from "
                  f"{name}@{done.base} and verified")
    console.print(_probe_table(done.probe))
    if not done.probe.passed:
        raise EdgepickError(f"{name}@{done.version} failed the probe ({done.probe.reason()}); "
                            f"{name}@{done.active} stays active")
    if server:
        probes = _probe_items(policy)
        payload = {"name": name, "version": done.version,
                   "canary": policy.canary.model_dump(), "probe_items": probes}
        _switch_live(server, "activate", payload, api_key)
        if policy.canary.window_s:
            asked = f", asks both versions {len(probes)} eval items" if probes else ""
            console.print(f"canary: the server watches {name}@{done.version} for "
                          f"{policy.canary.window_s:g} s{asked}, and rolls back to {done.active} "
                          "if it serves worse (`models history` shows the outcome: passed, "
                          "undetermined or rolled back)")
        return

    async def start(path: str) -> None:
        await check_engine(path, name, done.version)

    before = asyncio.run(do_activate(reg, name, done.version, start))
    console.print(f"{name}: {before or '-'} → {done.version} (active)")


def _update_policy(deploy: Path):
    """deploy.yaml's `update:` section; a file holding only `update:` is read as just that
    (every key of it is optional, docs/registry.md), a whole deploy.yaml as the deploy it is."""
    data = read_yaml_mapping(deploy, "expected a mapping (a deploy.yaml, or one with only "
                                     "update:)", empty_ok=False)
    if set(data) <= {"update", "schema_version"}:
        return validate_input(UpdatePolicy, data.get("update") or {}, deploy)
    return DeployConfig.load(deploy).update or UpdatePolicy()


def _probe_items(policy) -> list[dict]:
    """The canary's quality probe: the first items of the deploy's eval set (the update
    probe's), sent with the activation; the server cannot read the deploy's files itself."""
    n = policy.canary.probe_items
    if not policy.items or not n or not policy.canary.window_s:
        return []
    loaded = load_sets([DataSpec(set=policy.items, limit=4 * n)])
    items = [it for it in loaded.items if not it.tools][:n]
    return [it.model_dump(mode="json", by_alias=True, exclude_none=True) for it in items]


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")
