"""`edgepick serve`: the chosen configuration as a local OpenAI-compatible service (SPEC §10)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from edgepick.serve.settings import ServeSettings

F = ServeSettings.model_fields


def _h(name: str) -> str:
    return F[name].description or ""


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        deploy: Optional[Path] = typer.Argument(None, help="deploy.yaml written by `decide`"),
        model: Optional[str] = typer.Option(None, "-m", "--model",
                                            help="a GGUF file, a bundled name, or a registry "
                                                 "model (NAME or NAME@VERSION with --registry)"),
        host: Optional[str] = typer.Option(None, help=_h("host")),
        port: Optional[int] = typer.Option(None, help=_h("port")),
        slots: Optional[int] = typer.Option(None, help=_h("slots")),
        queue: Optional[int] = typer.Option(None, help=_h("queue")),
        deadline: Optional[float] = typer.Option(None, help=_h("deadline")),
        api_key: Optional[str] = typer.Option(None, help=_h("api_key")),
        max_body: Optional[str] = typer.Option(None, help=_h("max_body")),
        body_timeout: Optional[float] = typer.Option(None, help=_h("body_timeout")),
        cors_origin: Optional[list[str]] = typer.Option(None, "--cors-origin",
                                                        help=_h("cors_origin")),
        max_tokens: Optional[int] = typer.Option(None, help=_h("max_tokens")),
        max_prompt_tokens: Optional[int] = typer.Option(None, help=_h("max_prompt_tokens")),
        mem_limit: Optional[str] = typer.Option(None, help=_h("mem_limit")),
        mem_check: Optional[float] = typer.Option(None, help=_h("mem_check")),
        restart_cooldown: Optional[float] = typer.Option(None, help=_h("restart_cooldown")),
        drain_timeout: Optional[float] = typer.Option(None, help=_h("drain_timeout")),
        policy: Optional[Path] = typer.Option(None, help=_h("policy")),
        registry: Optional[Path] = typer.Option(None, help=_h("registry")),
        signals: Optional[Path] = typer.Option(None, help=_h("signals")),
        mode: Optional[str] = typer.Option(None, "--mode", help=_h("route_mode")),
        cloud: Optional[str] = typer.Option(None, "--cloud", help=_h("cloud")),
        sample_rate: Optional[float] = typer.Option(None, help=_h("sample_rate")),
        sample_out: Optional[Path] = typer.Option(None, help=_h("sample_out")),
        log_dir: Optional[Path] = typer.Option(None, help=_h("log_dir")),
        config: Optional[Path] = typer.Option(None, help="YAML file of these settings "
                                              "(flags > EDGEPICK_SERVE_* env > file)"),
        ctx: Optional[int] = typer.Option(None, "--ctx", help="context per slot (runtime)"),
        threads: Optional[int] = typer.Option(None, "--threads", help="engine threads (runtime)"),
        kv_type: Optional[str] = typer.Option(None, "--kv-type", help="KV cache type: f16, "
                                              "q8_0, q4_0 (runtime)"),
        batch: Optional[int] = typer.Option(None, "--batch", help="prompt batch size (runtime)"),
    ) -> None:
        """Serve a model as an OpenAI-compatible API (/v1/chat/completions, /v1/completions,
        /v1/models, /health, /metrics) on supervised llama-server engines, with bounded
        admission, deadlines, a memory watchdog, a model registry and hot swap by policy."""
        from edgepick.errors import EdgepickError
        from edgepick.registry.store import Registry
        from edgepick.serve import assemble

        settings = ServeSettings.load(
            config, host=host, port=port, slots=slots, queue=queue, deadline=deadline,
            api_key=api_key, max_body=max_body, body_timeout=body_timeout,
            cors_origin=cors_origin or None, max_tokens=max_tokens,
            max_prompt_tokens=max_prompt_tokens, mem_limit=mem_limit, mem_check=mem_check,
            restart_cooldown=restart_cooldown, drain_timeout=drain_timeout, policy=policy,
            registry=registry, signals=signals, route_mode=mode, cloud=cloud,
            sample_rate=sample_rate, sample_out=sample_out,
            log_dir=log_dir)
        runtime = {k: v for k, v in (("n_ctx", ctx), ("threads", threads), ("kv_type", kv_type),
                                     ("n_batch", batch)) if v is not None}
        if batch is not None:
            runtime["n_ubatch"] = batch
        reg = Registry(settings.registry) if settings.registry else None
        if deploy is not None and model is not None:
            raise EdgepickError("give a deploy.yaml or -m MODEL, not both")
        if deploy is not None:
            source = assemble.from_deploy(deploy, runtime)
        elif reg is not None and (model is None or not Path(model).exists()):
            source = assemble.from_registry(reg, model, runtime)
        elif model is not None:
            from edgepick.inputs import resolve_ref

            source = assemble.from_model(resolve_ref(model), runtime)
        else:
            raise EdgepickError("nothing to serve: give a deploy.yaml, -m MODEL or --registry DIR")
        state = assemble.build_state(settings, source, registry=reg)
        from edgepick.serve.run import run_server

        run_server(state)
