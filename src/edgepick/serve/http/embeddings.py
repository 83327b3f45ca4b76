"""`/v1/embeddings` in OpenAI's shape, answered by the deploy's embedding engine (a second locked
llama-server started with `--embeddings --pooling P`, serve/pool/edge.py's `EdgePool.embedder`).

The request is checked as OpenAI's (`input`: a string, a list of strings, token ids or lists of
token ids; `encoding_format` float or base64), `dimensions` is refused unless it is the model's
own width (llama.cpp cannot shorten a vector), and the answer names the served model and keeps
llama-server's usage (prompt and total tokens).
"""

from __future__ import annotations

import base64
from typing import Any

from edgepick.serve.http.request_checks import ENGINE_ONLY_FIELDS, check_ids
from edgepick.serve.request_models import EmbeddingRequest
from edgepick.serve.router_api import BadRequest, ServeError
from edgepick.serve.validation import validate

MAX_INPUTS = 2048  # OpenAI's own bound on the inputs of one request


def embedding_body(raw: dict, n_vocab: int | None = None) -> EmbeddingRequest:
    """The request to send to the embedding engine, as its typed model; raises BadRequest
    naming the field."""
    for name in ENGINE_ONLY_FIELDS:
        if name in raw:
            raise BadRequest(f"field '{name}' is not accepted: this server chooses its own "
                             "slots, files and models", param=name, code="unsupported_parameter")
    request = validate("embedding", raw)
    inputs = raw["input"]
    check_ids(inputs, n_vocab, "input")
    if isinstance(inputs, list) and inputs and not isinstance(inputs[0], int) \
            and len(inputs) > MAX_INPUTS:
        raise BadRequest(f"'input' holds {len(inputs)} inputs; at most {MAX_INPUTS} per request",
                         param="input")
    # the model is the server's; `dimensions` is checked against the answer; `user` is a label:
    # none is sent (a field set to None is not, serve/pool/forwarded.py)
    return request.model_copy(update={"model": None, "dimensions": None, "user": None})


async def empty_input(embedder, raw: dict, err: ServeError) -> ServeError:
    """After the engine refused the request (400), the text input its tokenizer turns into no
    token, named (`x-edgepick-min-input-tokens` in the schema), else the engine's own refusal.
    Looked for only on that path: a request that embeds pays no extra tokenization."""
    if err.status != 400:
        return err
    inputs = raw.get("input")
    texts = [(None, inputs)] if isinstance(inputs, str) else \
        [(i, x) for i, x in enumerate(inputs or []) if isinstance(x, str)]
    for i, text in texts:
        # as llama-server tokenizes an embedding input: special tokens added and parsed
        try:
            tokens = await embedder.tokenize(text, add_special=True, parse_special=True)
        except ServeError:  # the engine went away meanwhile: its refusal stands
            return err
        if not tokens:
            name = "input" if i is None else f"input[{i}]"
            return BadRequest(f"'{name}' has no token for this model (its tokenizer drops every "
                              "character of it): an embedding of nothing is refused",
                              param=name, code="empty_input")
    return err


def width(item: dict[str, Any]) -> int:
    vec = item.get("embedding")
    if isinstance(vec, str):  # base64 of little-endian float32
        return len(base64.b64decode(vec)) // 4
    return len(vec or ())


def answer(body: dict, model: str, dimensions: int | None) -> dict:
    """The engine's answer as OpenAI's, for the served model; a `dimensions` other than the
    model's width is the client's 400."""
    data = body.get("data") or []
    if dimensions is not None and data and width(data[0]) != dimensions:
        raise BadRequest(f"'dimensions' {dimensions}: this model's embeddings have "
                         f"{width(data[0])} dimensions and cannot be shortened",
                         param="dimensions", code="unsupported_value")
    usage = body.get("usage") or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    return {"object": "list", "data": data, "model": model,
            "usage": {"prompt_tokens": prompt, "total_tokens": prompt}}
