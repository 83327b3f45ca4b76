"""Ollama's refusal shape, `{"error": "..."}`, for the paths of its API (`/api/...`): the status
Ollama gives where serve's differs, and a message naming the fields as the Ollama client sent
them. Kept beside serve/errors.py, below the handlers, so the app's refusals
(serve/refusals.py) and the ASGI guard (serve/http/middleware.py) answer in it too."""

from __future__ import annotations

from edgepick.serve.errors import ServeError, UpstreamError, from_upstream

OLLAMA_PREFIX = "/api/"  # every path of Ollama's API
# serve's statuses Ollama has no equal for: its queue-full answer is a 503, and a feature a
# model lacks a 400 (server/routes.go, "does not support")
STATUS = {429: 503, 501: 400, 422: 400, 415: 400}
# the OpenAI field a check may name, and the Ollama field the client sent
FIELD_NAMES = {"max_tokens": "options.num_predict", "response_format": "format",
               "temperature": "options.temperature", "top_p": "options.top_p",
               "top_k": "options.top_k", "seed": "options.seed", "stop": "options.stop",
               "repeat_penalty": "options.repeat_penalty", "n_keep": "options.num_keep"}


def ollama_message(message: str) -> str:
    """A check's message with the OpenAI field names it quotes put back as the client sent
    them (`'max_tokens'` → `'options.num_predict'`)."""
    for openai_name, ollama_name in FIELD_NAMES.items():
        message = message.replace(f"'{openai_name}'", f"'{ollama_name}'")
    return message


def payload(err: ServeError) -> tuple[int, dict]:
    """A refusal as Ollama shapes it: its status and body."""
    if isinstance(err, UpstreamError):
        err = from_upstream(err)
    return STATUS.get(err.status, err.status), {"error": ollama_message(err.message)}
