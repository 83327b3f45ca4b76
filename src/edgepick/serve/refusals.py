"""Every refusal the app gives, in OpenAI's error shape (serve/errors.py): serve's own, the
framework's (404, 405, validation), and CORS preflights refused. Bodies are
ASCII JSON, so a message quoting a lone surrogate (a JSON key `"\\ud800"`) still renders."""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware

from edgepick.errors import first_problem
from edgepick.serve.errors import (BadRequest, NotFound, ServeError, UpstreamError, for_status,
                                   from_upstream)
from edgepick.serve.ollama_shape import OLLAMA_PREFIX, payload as ollama_payload

log = logging.getLogger("edgepick.serve")


class ErrorJSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


def error_response(err: ServeError) -> JSONResponse:
    if isinstance(err, UpstreamError):
        err = from_upstream(err)
    return ErrorJSON(err.payload(), status_code=err.status, headers=err.headers() or None)


def ollama_error(err: ServeError) -> JSONResponse:
    """A refusal in Ollama's shape (serve/ollama_shape.py), for its API's paths."""
    status, body = ollama_payload(err)
    return ErrorJSON(body, status_code=status, headers=err.headers() or None)


def shaped(request: Request, err: ServeError) -> JSONResponse:
    """A refusal in the shape of the API the path belongs to: Ollama's under /api/, else
    OpenAI's."""
    if request.url.path.startswith(OLLAMA_PREFIX):
        return ollama_error(err)
    return error_response(err)


class OpenAICORS(CORSMiddleware):
    """Starlette's CORS, whose refused preflight (400 text/plain "Disallowed CORS origin")
    answers in OpenAI's shape, naming what was refused."""

    def preflight_response(self, request_headers: Headers) -> Response:
        resp = super().preflight_response(request_headers)
        if resp.status_code != 400:
            return resp
        what = bytes(resp.body).decode().removeprefix("Disallowed CORS ")
        err = error_response(BadRequest(f"CORS preflight refused: {what} not allowed (allowed "
                                        "origins: --cors-origin)", code="cors_refused"))
        for k, v in resp.headers.items():
            if k.lower().startswith("access-control-") or k.lower() == "vary":
                err.headers[k] = v
        return err


def install_refusals(app: FastAPI) -> None:
    """The framework's own refusals through `error_response`. A bug (any other exception) is
    answered by serve/http/middleware.py's RequestGuard, with the request id."""

    @app.exception_handler(ServeError)
    async def _serve_error(request: Request, err: ServeError) -> Response:
        return shaped(request, err)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404:
            err: ServeError = NotFound(f"no endpoint {request.method} {request.url.path}; "
                                       "see /openapi.json")
        elif exc.status_code == 405:  # a HEAD runs as its GET (serve/http/head.py): name the HEAD
            method = "HEAD" if request.scope.get("state", {}).get("head") else request.method
            err = for_status(405, f"{method} is not allowed on {request.url.path}")
        else:
            err = for_status(exc.status_code, str(exc.detail))
        resp = shaped(request, err)
        for k, v in (exc.headers or {}).items():
            resp.headers[k] = v
        return resp

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        field, problem = first_problem(exc)
        param = ".".join(p for p in (field or "").split(".") if p not in ("body", "path", "query"))
        return shaped(request, BadRequest(f"'{param}': {problem}", param=param or None))
