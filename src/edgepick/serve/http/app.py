"""The HTTP face of `edgepick serve`: OpenAI-compatible endpoints, `/health`, `/metrics`, and the
admin endpoints the registry CLI calls (seed 000 §4.3, §5.2-5.3, §7.4; seed 001 §6.4).

The app is assembled here from its handlers (serve/http/generate.py, serve/http/info_api.py,
serve/http/engine_api.py, serve/http/feedback.py), which share a typed `ServeState`
(serve/http/state.py). Handlers only check a request and hand it to the router
(serve/router_api.py); they never know which engine answers. Every refusal, FastAPI's own
404/405/422 included, answers in OpenAI's error shape, Ollama's under /api/ (serve/errors.py); every answer carries `x-request-id` (serve/http/middleware.py).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI

from edgepick.serve.errors import OpenAICORS, install_refusals
from edgepick.serve.http.engine_api import engine_router
from edgepick.serve.http.feedback import loop_router
from edgepick.serve.http.generate import generate_router
from edgepick.serve.http.head import HeadAsGet
from edgepick.serve.http.info_api import info_router
from edgepick.serve.http.middleware import REQUEST_ID, RequestGuard
from edgepick.serve.http.ollama.api import ollama_router
from edgepick.serve.http.ollama.keep_alive import HEADER as KEEP_ALIVE_HEADER
from edgepick.serve.http.ollama.requests import TOOL_CHOICE_HEADER
from edgepick.serve.http.openapi_doc import install
from edgepick.serve.http.state import ServeState
from edgepick.serve.http.status_page import status_router
from edgepick.serve.router_api import TASK_HEADER

log = logging.getLogger("edgepick.serve")


def limits(state: ServeState) -> dict[str, int | None]:
    """This server's limits, for /openapi.json: what the schema allows is what it accepts."""
    pool = state.pool
    emb = pool.embedder
    return {"max_tokens": state.settings.max_tokens, "slots": pool.spec.slots,
            "n_vocab": pool.n_vocab,
            "embedding_vocab": emb.n_vocab if emb is not None else None,
            "embedding_width": emb.embedding_width if emb is not None else None,
            "max_prompt_tokens": state.max_prompt_tokens,
            "echo_max_prompt_tokens": pool.echo_limits.max_prompt_tokens,
            "echo_max_prompts": pool.echo_limits.max_prompts,
            "max_prompts": state.settings.max_prompts}


def lifespan_of(state: ServeState):
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        # the engine loads in the background so /health can answer 503 "loading" meanwhile
        tasks: list[asyncio.Task] = []

        async def start() -> None:
            try:
                await state.pool.start()
            except Exception as exc:
                state.start_error = exc
                log.error("engine failed to start: %s", exc)
                if state.on_start_failed:
                    state.on_start_failed(exc)
                return
            tasks.extend(asyncio.create_task(job()) for job in state.background)

        starter = asyncio.create_task(start())
        try:
            yield
        finally:
            starter.cancel()
            for t in tasks:
                t.cancel()
            await state.router.aclose()
            await state.pool.aclose()
    return lifespan


def add_cors(app: FastAPI, origins: list[str]) -> None:
    if "*" in origins:
        log.warning("CORS: any origin may call this server from a browser (--cors-origin '*'); "
                    "the API key is still required")
    # preflights are answered here without the key (browsers never send it on them); the call
    # that follows still needs it
    app.add_middleware(OpenAICORS, allow_origins=origins,
                       allow_methods=["GET", "HEAD", "POST", "OPTIONS"],
                       allow_headers=["authorization", "content-type", "x-api-key", REQUEST_ID,
                                      TASK_HEADER, TOOL_CHOICE_HEADER],
                       expose_headers=[REQUEST_ID, "x-edgepick-route", "x-edgepick-route-reason",
                                       "x-edgepick-model-version", "x-edgepick-model",
                                       "x-edgepick-cascade-step", "retry-after",
                                       KEEP_ALIVE_HEADER],
                       max_age=600)


def create_app(state: ServeState) -> FastAPI:
    app = FastAPI(title="edgepick serve", version="1", lifespan=lifespan_of(state),
                  docs_url=None, redoc_url=None, openapi_url="/openapi.json")
    install(app, lambda: limits(state))
    app.state.serve_settings = state.settings  # serve/run.py's server_config reads it
    app.include_router(engine_router(state))  # tokenizer, probes, engine slots (E)
    app.include_router(loop_router(state))  # feedback, metrics history (H, serve/http/feedback.py)
    install_refusals(app)  # every refusal in its API's error shape (serve/errors.py)
    if state.settings.cors_origin:
        add_cors(app, list(state.settings.cors_origin))
    app.add_middleware(HeadAsGet)  # HEAD on every GET route: the GET's status and headers
    app.add_middleware(RequestGuard)  # outermost: preflights and 431s get a request id too
    app.include_router(generate_router(state))  # chat and completions
    app.include_router(info_router(state))  # embeddings, models, health, metrics, admin
    app.include_router(ollama_router(state))  # Ollama's native API (serve/http/ollama/)
    app.include_router(status_router(state))  # the status page, /ui (serve/http/status_page.py)
    return app
