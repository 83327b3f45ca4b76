"""`edgepick serve`: the chosen configuration as a local OpenAI-compatible service (docs/serve.md).

The settings flags are made from one table (`SETTING_FLAGS`) and `ServeSettings`' own fields: a
flag's type, help text and validation are the setting's, so a setting gets its flag by one line
here and a flag cannot drift from what it sets.
"""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any, Optional

import typer

from edgepick.errors import EdgepickError
from edgepick.inputs import resolve_ref
from edgepick.records.candidate import DEFAULTS
from edgepick.registry.store import Registry
from edgepick.serve import assemble
from edgepick.serve.run import run_server
from edgepick.serve.settings import ServeSettings

# ServeSettings field → its flag (None: --field-name); sizes (1MiB) are read as text
SETTING_FLAGS: dict[str, str | None] = {
    "host": None, "port": None, "slots": None, "queue": None, "deadline": None,
    "api_key": None, "max_body": None, "body_timeout": None, "header_timeout": None,
    "cors_origin": None,
    "max_tokens": None, "max_prompt_tokens": None, "echo_max_prompt_tokens": None,
    "echo_max_tokens": None, "echo_queue": None, "echo_max_prompts": None, "max_prompts": None,
    "mem_limit": None,
    "mem_check": None, "restart_cooldown": None, "drain_timeout": None, "probe_timeout": None,
    "hung_after": None, "max_restarts": None, "restart_window": None, "memory_budget": None,
    "group_wait": None, "policy": None,
    "registry": None, "signals": None, "route_mode": "--mode", "cloud": None, "sample_rate": None,
    "sample_out": None, "log_dir": None,
}
SIZES = ("max_body", "mem_limit", "memory_budget")
# runtime flags → RuntimeSettings fields (--batch sets both batch sizes)
RUNTIME_FLAGS = {"ctx": "n_ctx", "threads": "threads", "kv_type": "kv_type", "batch": "n_batch"}


def _flag_type(name: str) -> Any:
    if name in SIZES:
        return str
    ann = ServeSettings.model_fields[name].annotation
    if typing.get_origin(ann) is list:  # a repeatable flag
        return ann
    return next((a for a in typing.get_args(ann) if a is not type(None)), ann)


def _shown(name: str, field) -> str | bool:
    """The setting's own default as --help shows it (the flag's None means "not given")."""
    value = field.default
    if value is None or not isinstance(value, (int, float, str)) or isinstance(value, bool):
        return False
    if name in SIZES and isinstance(value, int) and value % 1024 == 0:
        kib = value // 1024
        return f"{kib // 1024}MiB" if kib % 1024 == 0 else f"{kib}KiB"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _runtime_default(field: str) -> str:
    return f"the deploy.yaml's, else {getattr(DEFAULTS, field)}"


def _setting_params() -> list[inspect.Parameter]:
    out = []
    for name, flag in SETTING_FLAGS.items():
        field = ServeSettings.model_fields[name]
        option = typer.Option(None, flag or "--" + name.replace("_", "-"),
                              help=field.description or "", show_default=_shown(name, field))
        out.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option,
                                     annotation=Optional[_flag_type(name)]))
    return out


def serve(
    deploy: Optional[Path] = typer.Argument(None, help="deploy.yaml written by `decide`"),
    model: Optional[list[str]] = typer.Option(None, "-m", "--model",
                                              help="a GGUF file, a bundled name, or a registry "
                                                   "model (NAME or NAME@VERSION with "
                                                   "--registry); repeat it to serve several "
                                                   "models within --memory-budget"),
    config: Optional[Path] = typer.Option(None, help="YAML file of these settings "
                                          "(flags > EDGEPICK_SERVE_* env > file)"),
    ctx: Optional[int] = typer.Option(None, "--ctx", help="context per slot (runtime)",
                                          show_default=_runtime_default("n_ctx")),
    threads: Optional[int] = typer.Option(None, "--threads", help="engine threads (runtime)",
                                          show_default=_runtime_default("threads")),
    kv_type: Optional[str] = typer.Option(None, "--kv-type", help="KV cache type: f16, "
                                          "q8_0, q4_0 (runtime)",
                                          show_default=_runtime_default("kv_type")),
    batch: Optional[int] = typer.Option(None, "--batch", help="prompt batch size (runtime)",
                                          show_default=_runtime_default("n_batch")),
    **flags: Any,
) -> None:
    """Serve a deploy.yaml or a model as an OpenAI-compatible API on 127.0.0.1:8080.

    Serve a model as an OpenAI-compatible API (/v1/chat/completions, /v1/completions,
    /v1/embeddings, /v1/models, /health, /metrics) on supervised llama-server engines, with
    bounded admission, deadlines, liveness probes, a memory watchdog, a model registry and hot
    swap by policy."""
    if not flags.get("cors_origin"):
        flags["cors_origin"] = None  # none given: the file's or the environment's
    settings = ServeSettings.load(config, **flags)
    given = {"ctx": ctx, "threads": threads, "kv_type": kv_type, "batch": batch}
    runtime = {RUNTIME_FLAGS[k]: v for k, v in given.items() if v is not None}
    if batch is not None:
        runtime["n_ubatch"] = batch
    reg = Registry(settings.registry) if settings.registry else None
    models = model or []
    if deploy is not None and models:
        raise EdgepickError("give a deploy.yaml or -m MODEL, not both")
    if deploy is not None:
        source = assemble.from_deploy(deploy, runtime)
    elif len(models) > 1:
        source = assemble.from_models([resolve_ref(m) for m in models], runtime)
    elif reg is not None and (not models or not Path(models[0]).exists()):
        source = assemble.from_registry(reg, models[0] if models else None, runtime)
    elif models:
        source = assemble.from_model(resolve_ref(models[0]), runtime)
    else:
        raise EdgepickError("nothing to serve: give a deploy.yaml, -m MODEL or --registry DIR")
    state = assemble.build_state(settings, source, registry=reg)

    run_server(state)


_own = [p for p in inspect.signature(serve).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD]
serve.__signature__ = inspect.Signature(_own + _setting_params())  # type: ignore[attr-defined]
serve.__annotations__ = {**{p.name: p.annotation for p in serve.__signature__.parameters.values()},
                         "return": None}


def register(app: typer.Typer) -> None:
    app.command()(serve)
