"""Putting a server together from what the user gave: a deploy.yaml, a model, or a registry name;
the settings; the policy. Everything is checked before the engine starts (SPEC §10)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from edgepick.errors import EdgepickError, InputError
from edgepick.plugins import Plugins
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.deploy import DeployConfig
from edgepick.records.model_ref import ModelRef
from edgepick.registry.store import Registry, sha256_of, split_ref
from edgepick.serve.app import ServeState
from edgepick.serve.edge import EdgePool
from edgepick.serve.engine import EngineSpec
from edgepick.serve.policy_file import ServePolicy
from edgepick.serve.router_api import EdgeOnlyRouter, Router
from edgepick.serve.settings import ServeSettings

log = logging.getLogger("edgepick.serve")
ROUTER_GROUP = "edgepick.routers"
ROUTERS = Plugins(ROUTER_GROUP, "router",
                  unknown="the policy's route: section names router '{name}', which is not "
                          "installed (installed: {known}){hint}")


@dataclass
class Source:
    """The model to serve, resolved: a verified file, its served name and version."""

    path: str
    name: str
    version: str
    runtime: RuntimeSettings
    deploy: DeployConfig | None = None


def from_deploy(path: str | Path, runtime: dict) -> Source:
    cfg = DeployConfig.load(path)
    model = Path(cfg.model.path).expanduser()
    if not model.is_absolute():
        model = Path(path).parent / model
    if model.is_dir():  # a converted engine folder (docs/engines.md): not a llama-server model
        raise InputError(path, f"{model} is a {cfg.model.backend} model folder; edgepick serve "
                               "runs GGUF files with llama-server", field="model.path")
    if not model.is_file():
        raise InputError(path, f"model file {model} does not exist", field="model.path")
    got = sha256_of(model)
    if got != cfg.model.sha256.lower():
        raise InputError(path, f"SHA-256 of {model} is {got[:12]}…, the deploy file says "
                               f"{cfg.model.sha256[:12]}…; refusing to serve it", field="model.sha256")
    rt = cfg.runtime.model_copy(update=runtime)
    return Source(str(model), cfg.model.name, cfg.model.sha256[:12], rt, cfg)


def from_registry(registry: Registry, ref: str | None, runtime: dict) -> Source:
    models = registry.state().models
    if ref is None:
        if len(models) != 1:
            raise EdgepickError(f"the registry {registry.root} holds {len(models)} models; name "
                                "one with -m NAME")
        ref = next(iter(models))
    name, version = split_ref(ref)
    version = version or registry.model(name).active
    if version is None:
        raise EdgepickError(f"{name} has no active version; run `edgepick models activate "
                            f"{name}@VERSION`")
    path = registry.verify(name, version)
    return Source(str(path), name, version, RuntimeSettings().model_copy(update=runtime))


def from_model(ref: ModelRef, runtime: dict) -> Source:
    """A model the CLI resolved (edgepick.inputs): a GGUF path or a bundled name."""
    if ref.is_endpoint:
        raise EdgepickError(f"{ref.spec}: serve runs a local GGUF file; an endpoint is already "
                            "served")
    return Source(str(ref.path), ref.label, ref.identity()[:12],
                  RuntimeSettings().model_copy(update=runtime))


def load_router(policy: ServePolicy, deploy: DeployConfig | None,
                settings: ServeSettings | None = None) -> Router:
    """The policy's `route:` names a router registered under the `edgepick.routers` entry point
    group (`route: {router: NAME, ...}`, NAME defaulting to "default"); no section: edge only.
    `--mode` and `--cloud` fill in (or override) the section's mode and cloud."""
    section = policy.route if isinstance(policy.route, dict) else {}
    if settings is not None and settings.signals and policy.route is not None \
            and "signals_file" not in section:  # one signals file for swap and route
        section = dict(section, signals_file=str(settings.signals))
    if settings is not None and (settings.route_mode or settings.cloud):
        from edgepick.records.model_ref import parse_endpoint

        section = dict(section)
        if settings.route_mode:
            section["mode"] = settings.route_mode
        elif "mode" not in section and deploy is not None \
                and any(r.route == "cloud" for r in deploy.routes):
            section["mode"] = "by_task"  # a hybrid deploy.yaml given a cloud: its routes hold
        if settings.cloud:
            url, served = parse_endpoint(settings.cloud)
            section["cloud"] = dict(section.get("cloud") or {}, url=url, model=served)
    elif policy.route is None:
        cloud_tasks = [r.task for r in (deploy.routes if deploy else []) if r.route == "cloud"]
        if not cloud_tasks:
            return EdgeOnlyRouter()
        if deploy is None or deploy.cloud is None:
            # a hybrid decision made against a local reference: nothing to send those tasks to
            log.warning("deploy.yaml routes %s to the cloud but names no cloud endpoint; the "
                        "edge serves them (give --cloud URL, or cloud.url in deploy.yaml)",
                        ", ".join(cloud_tasks))
            return EdgeOnlyRouter()
        section = {"mode": "by_task"}  # the decision's per-task routes, as deploy.yaml gives them
    name = str(section.get("router", "default"))
    # read the entry points again each time: a policy may name a router installed since
    make = ROUTERS.fresh().load(name)
    try:
        return make(section, deploy)
    except InputError as exc:  # name the policy file the section came from
        where = settings.policy if settings is not None and settings.policy else "--mode/--cloud"
        raise InputError(where, exc.problem, field=exc.field) from None


def build_state(settings: ServeSettings, source: Source, *, registry: Registry | None = None,
                router: Router | None = None) -> ServeState:
    from edgepick.serve.control import RegistryControl
    from edgepick.serve.swap import HotSwap
    from edgepick.serve.watchdog import MemoryWatchdog

    policy = ServePolicy.load(settings.policy)
    spec = EngineSpec(path=source.path, name=source.name, version=source.version,
                      runtime=source.runtime, slots=settings.slots)
    pool = EdgePool(spec, queue=settings.queue, resources=policy.resources,
                    drain_timeout_s=settings.drain_timeout,
                    log_dir=str(settings.log_dir) if settings.log_dir else None)
    watchdog = MemoryWatchdog(pool, settings.mem_limit, settings.mem_check,
                              settings.restart_cooldown)
    background = [watchdog.run]
    admin = None
    if registry is not None:
        admin = RegistryControl(registry, pool)
    if policy.swap is not None:
        if registry is None:
            raise InputError(settings.policy, "a swap: section needs --registry (the versions "
                                              "it swaps between)", field="swap")
        try:
            swap = HotSwap(policy.swap, registry, pool, settings.signals)
        except EdgepickError as exc:
            raise InputError(settings.policy, str(exc), field="swap") from None
        background.append(swap.run)
    if router is None:
        router = load_router(policy, source.deploy, settings)
    return ServeState(pool, settings, router, background=background, admin=admin)
