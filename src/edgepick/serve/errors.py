"""Every refusal `edgepick serve` gives, and the one place that shapes it: OpenAI's
`{"error": {"message", "type", "param", "code"}}` with string codes, so the `openai` client,
LangChain and lm-eval branch on them as they do against OpenAI (table in docs/serve.md), and
Ollama's `{"error": "..."}` on its API's paths (`/api/...`). The app's handlers, the
framework's own answers (404, 405, validation, a refused CORS preflight), the ASGI guard and the
HTTP/1.1 protocol under the app all answer through `shape`, so a refusal reads the same
wherever it is given. Bodies are ASCII JSON, so a message quoting a lone surrogate (a JSON key
`"\\ud800"`) still renders.

A `ServeError` carries its HTTP status, OpenAI `type` and `code`, the request field it is about
(`param`, None when none), an optional `Retry-After`, and `reason`: the short label the metrics
count it under (`edgepick_rejections_total{reason}`).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware

from edgepick.errors import first_problem


class ServeError(Exception):
    """A request that cannot be served, with the HTTP status the client gets."""

    status: int = 500
    type: str = "server_error"
    code: str = "internal_error"
    reason: str | None = None  # metrics label; default: the code

    def __init__(self, message: str, *, retry_after: float | None = None,
                 status: int | None = None, param: str | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        self.param = param
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code

    @property
    def label(self) -> str:
        return self.reason or self.code

    def payload(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param,
                          "code": self.code}}

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(max(1, round(self.retry_after)))} if self.retry_after else {}


# OpenAI's error `type` of a status: the client's for a 4xx, but for the rate limit and a
# feature the server lacks; the server's for a 5xx
_TYPE_OF_STATUS = {429: "requests", 501: "not_supported_error"}


def openai_type(status: int) -> str:
    return _TYPE_OF_STATUS.get(status, "invalid_request_error" if status < 500 else "server_error")


# Every refusal kind, one line each: class name → (HTTP status, `code`, metrics reason (None:
# the code), when it is raised); its OpenAI `type` follows from the status (`openai_type`). The
# classes below are made from it, so a kind is added here and nowhere else; `for_status` takes
# the first kind of a status.
KINDS: dict[str, tuple[int, str, str | None, str]] = {
    "BadRequest": (400, "invalid_value", None,
                   "A bad field (named in `param`), a prompt over the cap, n over the slots."),
    "Unauthorized": (401, "invalid_api_key", None, "--api-key set and not sent."),
    "NotFound": (404, "unknown_url", None, "No such endpoint or model."),
    "MethodNotAllowed": (405, "method_not_allowed", None, "A method the path does not take."),
    "RequestTimeout": (408, "request_timeout", None,
                       "The body did not arrive within --body-timeout."),
    "BodyTooLarge": (413, "request_too_large", None, "A body over --max-body."),
    "UnsupportedMediaType": (415, "unsupported_media_type", None,
                             "A body that is not application/json in UTF-8."),
    "Unprocessable": (422, "invalid_value", None,
                      "Never sent by serve (its validation answers 400), kept for for_status."),
    "HeadersTooLarge": (431, "request_header_fields_too_large", None,
                        "Too many or too large headers."),
    "Overloaded": (429, "rate_limit_exceeded", "overloaded",
                   "Every slot and queue place is taken: refused at once (seed 000 §4.3)."),
    "ClientGone": (499, "client_closed_request", None,
                   "The client closed the connection before its answer (nginx's 499); nobody "
                   "reads the body."),
    "NotImplementedHere": (501, "not_implemented", None,
                           "Not enabled on this server (/v1/embeddings without an engine)."),
    "EngineUnavailable": (503, "engine_unavailable", None,
                          "The engine is restarting, swapping or died mid-request; retrying "
                          "later is safe."),
    "ResourceRefused": (503, "insufficient_resources", None,
                        "The resource check before admission (free memory, load) refused it "
                        "(seed 000 §5.2)."),
    "EdgeOnlyUnavailable": (503, "edge_only_task_unavailable", None,
                            "A task deploy.yaml keeps on the device (`edge_only_tasks`) that the "
                            "edge cannot serve now; it is never sent to the cloud instead (seed "
                            "000 §6.1)."),
    "DeadlineExceeded": (504, "deadline_exceeded", None,
                         "Queue wait plus generation went past the request's deadline."),
}
_BY_STATUS: dict[int, type[ServeError]] = {}
for _name, (_status, _code, _reason, _doc) in KINDS.items():
    _cls = type(_name, (ServeError,), {"status": _status, "type": openai_type(_status),
                                       "code": _code,
                                       "reason": _reason, "__doc__": _doc,
                                       "__module__": __name__, "__qualname__": _name})
    globals()[_name] = _cls
    _BY_STATUS.setdefault(_status, _cls)
__all__ = ["ServeError", "UpstreamError", "from_upstream", "for_status", "sse_event", "shape",
           "error_response", "shaped", "OpenAICORS", "install_refusals", "ollama_message",
           "OLLAMA_PREFIX", "KINDS", *KINDS]


class UpstreamError(ServeError):
    """The engine answered with an HTTP error; `status` and `payload` are the engine's."""

    code = "upstream_error"

    def __init__(self, message: str, *, status: int, payload: dict | None = None) -> None:
        super().__init__(message, status=status)
        self.payload = payload


# llama-server answers some malformed requests with 500 (an exception while reading the JSON):
# those are the client's fault, and the client gets a 400
_CLIENT_FAULT_MARKERS = ("[json.exception.", "missing", "invalid", "unsupported", "must be",
                         "expected", "not supported", "cannot be", "too large to process")
_CODE_OF_STATUS = {400: "invalid_value", 401: "invalid_api_key", 404: "not_found",
                   408: "request_timeout", 413: "request_too_large", 429: "rate_limit_exceeded",
                   500: "internal_error", 501: "not_implemented", 502: "upstream_error",
                   503: "engine_unavailable", 504: "deadline_exceeded"}


def from_upstream(err: UpstreamError) -> ServeError:
    """An engine's (or a cloud's) HTTP error in edgepick's shape; a parse error answered 5xx
    becomes the client's 400."""
    status = err.status
    message = err.message
    if status >= 500 and any(m in message.lower() for m in _CLIENT_FAULT_MARKERS):
        status = 400
    low = message.lower()
    if status == 400 and ("too large to process" in low or "context" in low and (
            "exceed" in low or "too long" in low or "larger than" in low)):
        code = "context_length_exceeded"
    else:
        code = _CODE_OF_STATUS.get(status, "upstream_error")
    out = ServeError(message, status=status, code=code, retry_after=err.retry_after)
    out.type = openai_type(status)
    return out


def for_status(status: int, message: str) -> ServeError:
    """A framework-level answer (unknown path, wrong method, …) as a ServeError."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        return ServeError(message, status=status)
    return cls(message)


def sse_event(err: ServeError) -> bytes:
    """The error event a stream ends with when it cannot finish (headers already sent): the
    same shape as a refusal, plus the HTTP status it would have had."""
    payload = err.payload()
    payload["error"]["status"] = err.status
    return f"data: {json.dumps(payload)}\n\n".encode()


# -- Ollama's shape, for the paths of its API -----------------------------------------------
OLLAMA_PREFIX = "/api/"  # every path of Ollama's API
# serve's statuses Ollama has no equal for: its queue-full answer is a 503, and a feature a
# model lacks a 400 (server/routes.go, "does not support")
OLLAMA_STATUS = {429: 503, 501: 400, 422: 400, 415: 400}
# the OpenAI field a check may name, and the Ollama field the client sent
OLLAMA_FIELDS = {"max_tokens": "options.num_predict", "response_format": "format",
                 "temperature": "options.temperature", "top_p": "options.top_p",
                 "top_k": "options.top_k", "seed": "options.seed", "stop": "options.stop",
                 "repeat_penalty": "options.repeat_penalty", "n_keep": "options.num_keep"}


def ollama_message(message: str) -> str:
    """A check's message with the OpenAI field names it quotes put back as the client sent
    them (`'max_tokens'` → `'options.num_predict'`)."""
    for openai_name, ollama_name in OLLAMA_FIELDS.items():
        message = message.replace(f"'{openai_name}'", f"'{ollama_name}'")
    return message


def shape(err: ServeError, path: str = "") -> tuple[ServeError, int, dict]:
    """A refusal as the API of `path` shapes it: the error answered (an engine's own in
    edgepick's words), its status and its body; Ollama's under /api/, else OpenAI's."""
    if isinstance(err, UpstreamError):
        err = from_upstream(err)
    if path.startswith(OLLAMA_PREFIX):
        return err, OLLAMA_STATUS.get(err.status, err.status), {
            "error": ollama_message(err.message)}
    return err, err.status, err.payload()


# -- the app's answers ------------------------------------------------------------------------
class ErrorJSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


def error_response(err: ServeError, path: str = "") -> JSONResponse:
    """`err` as a response in the shape of `path`'s API (OpenAI's by default)."""
    err, status, body = shape(err, path)
    return ErrorJSON(body, status_code=status, headers=err.headers() or None)


def shaped(request: Request, err: ServeError) -> JSONResponse:
    return error_response(err, request.url.path)


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
    """The framework's own refusals through `shaped`. A bug (any other exception) is answered
    by serve/http/middleware.py's RequestGuard, with the request id."""

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
