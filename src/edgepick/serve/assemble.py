"""Putting a server together from what the user gave: a deploy.yaml, a model, or a registry name;
the settings; the policy. Everything is checked before the engine starts (docs/serve.md)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from edgepick.errors import EdgepickError, InputError
from edgepick.models.gguf_info import GGUF_MAGIC
from edgepick.plugins import Plugins
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.deploy import DeployConfig
from edgepick.records.model_ref import ModelRef, parse_endpoint
from edgepick.registry.store import Registry, sha256_of, split_ref
from edgepick.serve.engine.llama_server import EngineSpec
from edgepick.serve.engine.template_warning import warn_without_template
from edgepick.serve.engine.watchdog import MemoryWatchdog
from edgepick.serve.http.app import ServeState
from edgepick.serve.pool.control import RegistryControl
from edgepick.serve.pool.edge import EdgePool
from edgepick.serve.pool.policy_file import ServePolicy
from edgepick.serve.pool.scoring import EchoLimits
from edgepick.serve.pool.swap import HotSwap
from edgepick.serve.pool.team import Member, TeamPool, check_budget
from edgepick.serve.router_api import Router
from edgepick.serve.settings import ServeSettings
from edgepick.store.identity import ref_identity

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
    embeddings: EngineSpec | None = None  # deploy.yaml's embedding engine, when it has one
    team: list[Member] | None = None  # several models (serve/pool/team.py), the first the default


def _deploy_file(deploy: str | Path, given: str, sha256: str | None, field: str) -> Path:
    """A model file deploy.yaml names (relative to its folder), checked to be a GGUF file with
    the SHA-256 it gives."""
    model = Path(given).expanduser()
    if not model.is_absolute():
        model = Path(deploy).parent / model
    if model.is_dir():  # a converted engine folder (docs/engines.md): not a llama-server model
        raise InputError(deploy, f"{model} is a model folder; edgepick serve runs GGUF files "
                                 "with llama-server", field=field)
    if not model.is_file():
        raise InputError(deploy, f"model file {model} does not exist", field=field)
    with open(model, "rb") as fh:
        if fh.read(4) != GGUF_MAGIC:
            raise InputError(deploy, f"{model} is not a GGUF file", field=field)
    if sha256 is not None:
        got = sha256_of(model)
        if got != sha256.lower():
            raise InputError(deploy, f"SHA-256 of {model} is {got[:12]}…, the deploy file says "
                                     f"{sha256[:12]}…; refusing to serve it",
                             field=field.rsplit(".", 1)[0] + ".sha256")
    return model


def _runtime(path: str | Path, base: RuntimeSettings, runtime: dict,
             field: str) -> RuntimeSettings:
    rt = base.model_copy(update=runtime)
    if rt.adapter is not None:  # the adapter the decision measured, pinned like the model
        lora = _deploy_file(path, rt.adapter.path, rt.adapter.sha256, f"{field}.adapter.path")
        rt = rt.model_copy(update={"adapter": rt.adapter.model_copy(update={"path": str(lora)})})
    spec = rt.speculative
    if spec is not None and spec.model:  # the draft the decision measured, pinned the same way
        draft = _deploy_file(path, spec.model, spec.sha256, f"{field}.speculative.model")
        rt = rt.model_copy(update={"speculative": spec.model_copy(update={"model": str(draft)})})
    return rt


def _team(path: str | Path, cfg: DeployConfig, runtime: dict) -> list[Member]:
    """Every edge model of a team deploy.yaml, verified; the default (`model`) first."""
    models = sorted(cfg.edge_models(), key=lambda m: m.name != cfg.model.name)
    out = []
    for m in models:
        i = cfg.models.index(m)
        file = _deploy_file(path, m.path, m.sha256, f"models[{i}].path")
        rt = _runtime(path, m.runtime or cfg.runtime, runtime, f"models[{i}].runtime")
        out.append(Member(EngineSpec(path=str(file), name=m.name, version=m.sha256[:12],
                                     runtime=rt), m.pin, m.ttl, m.need_bytes))
    return out


def from_deploy(path: str | Path, runtime: dict) -> Source:
    cfg = DeployConfig.load(path)
    model = _deploy_file(path, cfg.model.path, cfg.model.sha256, "model.path")
    rt = _runtime(path, cfg.runtime, runtime, "runtime")
    source = Source(str(model), cfg.model.name, cfg.model.sha256[:12], rt, cfg)
    if cfg.is_team:
        source.team = _team(path, cfg, runtime)
    emb = cfg.embeddings
    if emb is not None:
        file = _deploy_file(path, emb.model, emb.sha256, "embeddings.model")
        source.embeddings = EngineSpec(
            path=str(file), name=file.stem, version=(emb.sha256 or "")[:12] or "1",
            runtime=RuntimeSettings(n_ctx=emb.n_ctx, threads=rt.threads),
            slots=emb.slots, pooling=emb.pooling)
    return source


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
    path, adapter = registry.verified(name, version)
    rt = RuntimeSettings().model_copy(update=runtime)
    return Source(str(path), name, version, rt.model_copy(update={"adapter": adapter}))


def from_model(ref: ModelRef, runtime: dict) -> Source:
    """A model the CLI resolved (edgepick.inputs): a GGUF path or a bundled name."""
    if ref.is_endpoint:
        raise EdgepickError(f"{ref.spec}: serve runs a local GGUF file; an endpoint is already "
                            "served")
    return Source(str(ref.path), ref.label, ref_identity(ref)[:12],
                  RuntimeSettings().model_copy(update=runtime))


def from_models(refs: list[ModelRef], runtime: dict) -> Source:
    """`serve -m A -m B`: several models without a deploy, none pinned, the first the default
    (needs estimated from the files until each has loaded: serve/pool/team.py)."""
    sources = [from_model(ref, runtime) for ref in refs]
    names = [s.name for s in sources]
    if len(set(names)) < len(names):
        raise EdgepickError(f"-m names the same model twice ({', '.join(names)})")
    first = sources[0]
    first.team = [Member(EngineSpec(path=s.path, name=s.name, version=s.version,
                                    runtime=s.runtime)) for s in sources]
    return first


def load_router(policy: ServePolicy, deploy: DeployConfig | None,
                settings: ServeSettings | None = None) -> Router:
    """The router the policy's `route:` section names (`route: {router: NAME, ...}`, NAME
    defaulting to "default"), loaded from the `edgepick.routers` entry point group and called
    with the section (None when the policy has none) and the deploy; it validates the section
    and applies its own defaults. `--mode` and `--cloud` fill in (or override) the section's
    `mode` and `cloud`. Under deploy.yaml's `network: offline` no router is given a cloud."""
    section = dict(policy.route) if isinstance(policy.route, dict) else None
    if settings is not None and settings.signals and section is not None \
            and "signals_file" not in section:  # one signals file for swap and route
        section["signals_file"] = str(settings.signals)
    flags: dict = {}
    if settings is not None and settings.route_mode:
        flags["mode"] = settings.route_mode
    if settings is not None and settings.cloud:
        url, served = parse_endpoint(settings.cloud)
        flags["cloud"] = dict((section or {}).get("cloud") or {}, url=url, model=served)
    if deploy is not None and deploy.network == "offline":
        if "cloud" in flags:
            raise EdgepickError("deploy.yaml says network: offline; --cloud contradicts it "
                                "(no request leaves this device)")
        if section and section.get("cloud"):
            log.warning("deploy.yaml says network: offline: the policy's route.cloud is not used")
        section = {k: v for k, v in section.items() if k != "cloud"} if section else section
        deploy = deploy.model_copy(update={"cloud": None})
    if flags:
        section = dict(section or {}, **flags)
    name = str((section or {}).get("router", "default"))
    # read the entry points again each time: a policy may name a router installed since
    make = ROUTERS.fresh().load(name)
    try:
        return make(section, deploy)
    except InputError as exc:  # name the policy file the section came from
        where = settings.policy if settings is not None and settings.policy else "--mode/--cloud"
        raise InputError(where, exc.problem, field=exc.field) from None


def forced_routes_allowed(policy: ServePolicy) -> bool:
    """The test-only route headers (serve/http/forced_routes.py), when the policy allows them."""
    return isinstance(policy.route, dict) and policy.route.get("allow_forced_route") is True


def _team_pool(settings: ServeSettings, source: Source, pool_args: dict) -> TeamPool:
    """The team's pool, its memory plan checked again against serve's budget (--memory-budget,
    else deploy.yaml's memory.budget_bytes): a model that can never fit is refused here."""
    members = [replace(m, spec=replace(m.spec, slots=settings.slots)) for m in source.team or []]
    budget = settings.memory_budget
    cfg = source.deploy
    if cfg is not None:
        cfg.check_memory(budget, source="deploy.yaml")
        if budget is None and cfg.memory is not None:
            budget = cfg.memory.budget_bytes
    check_budget(members, budget)
    return TeamPool(members, budget=budget, group_wait=settings.group_wait, deploy=cfg,
                    pool_args=pool_args, embeddings=source.embeddings, queue=settings.queue)


def build_state(settings: ServeSettings, source: Source, *, registry: Registry | None = None,
                router: Router | None = None) -> ServeState:
    policy = ServePolicy.load(settings.policy)
    pool_args = dict(resources=policy.resources, drain_timeout_s=settings.drain_timeout,
                     log_dir=str(settings.log_dir) if settings.log_dir else None,
                     probe_timeout_s=settings.probe_timeout, hung_after_s=settings.hung_after,
                     max_restarts=settings.max_restarts,
                     restart_window_s=settings.restart_window,
                     echo_limits=EchoLimits(settings.echo_max_prompt_tokens,
                                            settings.echo_max_tokens, settings.echo_queue,
                                            settings.echo_max_prompts))
    background = []
    if source.team:
        if registry is not None or policy.swap is not None:
            raise EdgepickError("a team of models is served without --registry or a swap: "
                                "policy (those switch one model's versions)")
        pool = _team_pool(settings, source, pool_args)
        engines = [*pool.pools.values(), pool.embedder]
        background += pool.background()
    else:
        if settings.memory_budget:  # said, not silently ignored
            log.warning("--memory-budget applies to a team (several -m, or a team deploy.yaml); "
                        "one model is served without it (--mem-limit bounds one engine)")
        spec = EngineSpec(path=source.path, name=source.name, version=source.version,
                          runtime=source.runtime, slots=settings.slots)
        pool = EdgePool(spec, queue=settings.queue, embeddings=source.embeddings, **pool_args)
        engines = [pool, pool.embedder]
    warn_without_template([(m.spec.name, m.spec.path) for m in source.team or []]
                          or [(source.name, source.path)])
    # one watchdog per engine: a team's members each have their own, as one engine has
    background += [MemoryWatchdog(p.supervisor, settings.mem_limit, settings.mem_check,
                                  settings.restart_cooldown).run
                   for p in engines if p is not None]
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
    return ServeState(pool, settings, router, background=background, admin=admin,
                      deploy=source.deploy, test_headers=forced_routes_allowed(policy))
