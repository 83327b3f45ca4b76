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

log = logging.getLogger("edgepick.serve")


class ErrorJSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


def error_response(err: ServeError) -> JSONResponse:
    if isinstance(err, UpstreamError):
        err = from_upstream(err)
    return ErrorJSON(err.payload(), status_code=err.status, headers=err.headers() or None)


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
    answered by serve/middleware.py's RequestGuard, with the request id."""

    @app.exception_handler(ServeError)
    async def _serve_error(_request: Request, err: ServeError) -> Response:
        return error_response(err)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404:
            err: ServeError = NotFound(f"no endpoint {request.method} {request.url.path}; "
                                       "see /openapi.json")
        elif exc.status_code == 405:
            err = for_status(405, f"{request.method} is not allowed on {request.url.path}")
        else:
            err = for_status(exc.status_code, str(exc.detail))
        resp = error_response(err)
        for k, v in (exc.headers or {}).items():
            resp.headers[k] = v
        return resp

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> Response:
        field, problem = first_problem(exc)
        param = ".".join(p for p in (field or "").split(".") if p not in ("body", "path", "query"))
        return error_response(BadRequest(f"'{param}': {problem}", param=param or None))
