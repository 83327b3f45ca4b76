"""`/openapi.json` with the real request and response models (serve/request_models.py) and every
status an endpoint answers, each error in OpenAI's shape. The handlers read their bodies
themselves (bounded, before parsing), so the request schemas are declared here rather than
through FastAPI's body parameters."""

from __future__ import annotations

import copy
from typing import Any, Callable

from pydantic import BaseModel

from edgepick.serve import request_models as rm
from edgepick.serve.http import answer_models as am

REF = "#/components/schemas/{model}"
_ERRORS = {
    400: "invalid request: the field is named in error.param",
    401: "missing or wrong API key",
    404: "unknown path or model",
    405: "method not allowed",
    408: "the body did not arrive in time",
    413: "body over --max-body",
    415: "a body that is not application/json in UTF-8",
    429: "every slot and queue place taken (Retry-After)",
    431: "too many or too large headers",
    499: "the client closed the connection (counted, never read)",
    500: "a bug in edgepick (never for bad input)",
    501: "not enabled on this server",
    502: "the cloud failed and no other path could answer",
    503: "engine restarting, resources short, or an edge-only task the edge cannot serve",
    504: "deadline passed",
}
_GENERATE = (400, 401, 408, 413, 415, 429, 431, 499, 503, 504)
_BODY = (400, 401, 408, 413, 415, 431, 499)  # an endpoint that reads a body
_SPEC: dict[str, tuple[type[BaseModel] | None, type[BaseModel], tuple[int, ...], bool]] = {
    # name: (request model, answer model, error statuses, streams)
    "chat": (rm.ChatCompletionRequest, am.ChatCompletion, _GENERATE + (502,), True),
    "completion": (rm.CompletionRequest, am.Completion, _GENERATE + (502,), True),
    "embedding": (rm.EmbeddingRequest, am.EmbeddingList, _GENERATE + (501,), False),
    "models": (None, am.ModelList, (401,), False),
    "model": (None, am.ModelCard, (401, 404), False),
    "health": (None, am.Health, (503,), False),
    # the engine's own endpoints (serve/http/engine_api.py) and the loop's (serve/http/feedback.py)
    "tokenize": (rm.TokenizeRequest, am.TokenizeAnswer, _BODY + (503, 504), False),
    "detokenize": (rm.DetokenizeRequest, am.DetokenizeAnswer, _BODY + (503, 504), False),
    "tokenizer_info": (None, am.TokenizerInfo, (401, 503, 504), False),
    "ready": (None, am.Readiness, (503,), False),
    "live": (None, am.Liveness, (), False),
    "slots": (None, am.SlotUse, (401, 503, 504), False),
    "feedback": (rm.FeedbackBody, am.FeedbackAnswer, (400, 401, 413, 415, 431), False),
}
# answers whose 503 is the endpoint's own body (readiness), not an error
_OWN_503 = {"health": am.Health, "ready": am.Readiness}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def describe(name: str) -> dict[str, Any]:
    """The keyword arguments of the route decorator for endpoint `name`."""
    request, answer, errors, streams = _SPEC[name]
    ok: dict[str, Any] = {"description": "the answer",
                          "content": {"application/json": {"schema": _ref(answer)}}}
    if streams:
        # one server-sent event: `data:` is a JSON chunk of the answer, or `[DONE]`
        ok["content"]["text/event-stream"] = {"schema": {
            "type": "object", "required": ["data"],
            "properties": {"data": {"type": "string"}, "event": {"type": "string"}}}}
    responses: dict[int | str, Any] = {200: ok}
    for status in errors:
        responses[status] = {"description": _ERRORS[status], "content": {
            "application/json": {"schema": _ref(am.ErrorResponse)}}}
    if name in _OWN_503:
        responses[503] = {"description": "not ready: the first engine loading, a restart, an "
                          "engine that does not answer its probe (unresponsive) or one that "
                          "could not be restarted (failed)", "content": {
            "application/json": {"schema": _ref(_OWN_503[name])}}}
    extra: dict[str, Any] = {}
    if request is not None:
        extra["requestBody"] = {"required": True, "content": {
            "application/json": {"schema": _ref(request)}}}
    return {"responses": responses, "openapi_extra": extra, "response_model": None}


def schemas() -> dict[str, Any]:
    """Every model the descriptions refer to, with their nested models, as OpenAPI components."""
    out: dict[str, Any] = {}
    models = {m for spec in _SPEC.values() for m in spec[:2] if m is not None}
    models.add(am.ErrorResponse)
    for model in sorted(models, key=lambda m: m.__name__):
        schema = model.model_json_schema(ref_template=REF, by_alias=True)
        out.update(schema.pop("$defs", {}))
        out[model.__name__] = schema
    return out


def install(app, limits: Callable[[], dict[str, int | None]] | None = None) -> None:
    """Give `app` an openapi() that adds the request and answer models to the components, with
    this server's own limits (`limits()`: max_tokens, slots, n_vocab, embedding_width; None
    where not known yet), so a request the schema allows is one the server accepts."""
    original = app.openapi
    base: dict[str, Any] = {}

    def openapi() -> dict[str, Any]:
        if not base:
            doc = original()
            doc.setdefault("components", {}).setdefault("schemas", {}).update(schemas())
            base.update(doc)
        if limits is None:
            return base
        doc = copy.deepcopy(base)
        apply_limits(doc["components"]["schemas"], limits())
        return doc

    app.openapi = openapi


def _cap(prop: dict[str, Any], **bounds: int) -> None:
    """Bound the integer branch of a field's schema (the integer itself, or anyOf with null)."""
    for branch in prop.get("anyOf", [prop]):
        if branch.get("type") == "integer":
            branch.update(bounds)


def _cap_ids(node: Any, top: int) -> None:
    """Every token id (an integer at least 0) under `node`: below the vocabulary."""
    if isinstance(node, dict):
        if node.get("type") == "integer" and node.get("minimum") == 0:
            node["maximum"] = top
        for v in node.values():
            _cap_ids(v, top)
    elif isinstance(node, list):
        for v in node:
            _cap_ids(v, top)


def apply_limits(comps: dict[str, Any], lim: dict[str, int | None]) -> None:
    for model in ("ChatCompletionRequest", "CompletionRequest"):
        props = comps[model]["properties"]
        for field in ("max_tokens", "max_completion_tokens"):
            if field in props and lim.get("max_tokens"):
                _cap(props[field], maximum=lim["max_tokens"])
        if lim.get("slots"):
            _cap(props["n"], maximum=lim["slots"])
    vocab = lim.get("n_vocab")
    if vocab:
        _cap_ids(comps["DetokenizeRequest"]["properties"]["tokens"], vocab - 1)
        _cap_ids(comps["CompletionRequest"]["properties"]["prompt"], vocab - 1)
    if lim.get("embedding_vocab"):
        _cap_ids(comps["EmbeddingRequest"]["properties"]["input"], lim["embedding_vocab"] - 1)
    _prompt_caps(comps, lim)
    if lim.get("embedding_width"):  # llama.cpp cannot shorten a vector: its own width only
        width = lim["embedding_width"]
        _cap(comps["EmbeddingRequest"]["properties"]["dimensions"], minimum=width,
             maximum=width)


# The prompt caps are in tokens, which JSON Schema cannot count: they are stated as keywords of
# their own (the 400 `context_length_exceeded` beyond them quotes the count and the cap), and
# exactly where the prompt is token ids. docs/serve.md says how the contract fuzz reads them.
MAX_PROMPT_TOKENS = "x-edgepick-max-prompt-tokens"
ECHO_MAX_PROMPT_TOKENS = "x-edgepick-echo-max-prompt-tokens"


def _prompt_caps(comps: dict[str, Any], lim: dict[str, int | None]) -> None:
    cap = lim.get("max_prompt_tokens")
    if cap:
        for model in ("ChatCompletionRequest", "CompletionRequest"):
            comps[model][MAX_PROMPT_TOKENS] = cap
        for branch in comps["CompletionRequest"]["properties"]["prompt"].get("anyOf", []):
            if branch.get("type") == "array" and branch.get("items", {}).get("type") == "integer":
                branch["maxItems"] = cap  # one prompt of token ids: its length is its count
    completion = comps["CompletionRequest"]
    if lim.get("max_prompts"):  # several prompts (strings, or lists of ids) run in turn
        for branch in completion["properties"]["prompt"].get("anyOf", []):
            if branch.get("type") == "array" and branch.get("items", {}).get("type") != "integer":
                branch["maxItems"] = lim["max_prompts"]
    if lim.get("echo_max_prompt_tokens"):
        completion[ECHO_MAX_PROMPT_TOKENS] = lim["echo_max_prompt_tokens"]
    if lim.get("echo_max_prompts"):  # an echo lists at most so many prompts (strings or ids)
        completion["then"] = {"properties": {"prompt": {"anyOf": [
            {"not": {"type": "array"}}, {"items": {"type": "integer"}},
            {"maxItems": lim["echo_max_prompts"]}]}}}
