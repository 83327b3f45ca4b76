"""Endpoints about the engine itself, beside the OpenAI ones: the tokenizer endpoints lm-eval's
`tokenizer_backend=remote` reads (`RemoteTokenizer` in lm_eval/utils.py, shaped as vLLM's:
`GET /tokenizer_info`, `POST /tokenize {"prompt", "add_special_tokens"}` → `{"tokens"}`,
`POST /detokenize {"tokens"}` → `{"prompt"}`), llama-server's own shapes for the same
(`content` / `add_special`), liveness and readiness probes, and the engine's slot use beside
edgepick's accounting. Everything but the probes needs the server's key.

Included from serve/http/app.py with `app.include_router(engine_router(state))`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from edgepick.serve.http.openapi_doc import describe
from edgepick.serve.http.request_checks import check_key, read_json
from edgepick.serve.request_models import DetokenizeRequest, TokenizeRequest
from edgepick.serve.router_api import BadRequest
from edgepick.serve.validation import validate_model


def _flag(body: dict, *names: str, default: bool) -> bool:
    return next((body[name] for name in names if name in body), default)


def engine_router(state: Any) -> APIRouter:
    """`state` is the app's ServeState (its pool and settings)."""
    router = APIRouter()
    pool = state.pool
    s = state.settings

    def authorized(request: Request) -> None:
        check_key(request, s.api_key)

    @router.get("/tokenizer_info", **describe("tokenizer_info"))
    async def tokenizer_info(request: Request) -> JSONResponse:
        authorized(request)
        props = await pool.props()
        return JSONResponse({
            "model": pool.spec.name,
            "bos_token": props.get("bos_token") or None,
            "eos_token": props.get("eos_token") or None,
            "pad_token": None,
            "chat_template": props.get("chat_template") or None,
            "max_model_len": pool.spec.runtime.n_ctx,
        })

    @router.post("/tokenize", **describe("tokenize"))
    async def tokenize(request: Request) -> JSONResponse:
        authorized(request)
        body = await read_json(request, s.max_body, s.body_timeout)
        if "prompt" not in body and "content" not in body:
            raise BadRequest("'prompt' (or 'content') is required", param="prompt",
                             code="missing_required_parameter")
        validate_model(TokenizeRequest, body)
        text = body.get("prompt", body.get("content"))
        # lm-eval sends add_special_tokens false; llama-server's default is to add them
        add = _flag(body, "add_special_tokens", "add_special", default=True)
        parse = _flag(body, "parse_special", default=True)
        tokens = await pool.tokenize(text, add, parse)
        return JSONResponse({"tokens": tokens, "count": len(tokens),
                             "max_model_len": pool.spec.runtime.n_ctx})

    @router.post("/detokenize", **describe("detokenize"))
    async def detokenize(request: Request) -> JSONResponse:
        authorized(request)
        body = await read_json(request, s.max_body, s.body_timeout)
        validate_model(DetokenizeRequest, body)
        tokens = body["tokens"]
        text = await pool.detokenize(tokens)
        return JSONResponse({"prompt": text, "content": text})

    @router.get("/health/live", **describe("live"))
    async def live() -> JSONResponse:
        # edgepick's own loop answers: the process is alive, whatever its engine does
        return JSONResponse({"status": "alive"})

    @router.get("/health/ready", **describe("ready"))
    async def ready() -> JSONResponse:
        h = pool.health()
        return JSONResponse(h, status_code=200 if h["ready"] else 503,
                            headers=None if h["ready"] else {"Retry-After": "2"})

    @router.get("/admin/engine/slots", **describe("slots"))
    async def slots(request: Request) -> JSONResponse:
        """edgepick's busy slots and waiting requests beside the engine's own processing and
        deferred counts (its /metrics, reached with the engine's key)."""
        authorized(request)
        return JSONResponse(await pool.slot_use())

    return router
