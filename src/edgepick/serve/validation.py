"""A body checked into its OpenAI request model: the typed request the handlers route and the
pool forwards, or a 400 naming the first field that breaks it, in the words the client used.
Below the handlers, so the pool checks a body a router wrote itself the same way."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from edgepick.serve.errors import BadRequest
from edgepick.serve.request_models import REQUEST_MODELS


def _param(loc: tuple) -> str:
    out = ""
    for p in loc:
        if isinstance(p, int):
            out += f"[{p}]"
        elif p in ("str", "list", "function-after", "literal", "chain", "function-plain") or \
                str(p).startswith(("list[", "union[", "function-", "literal[", "json-or-python",
                                   "constrained-")):
            continue  # pydantic's names for the branch of a union it tried
        elif isinstance(p, str) and p in ("system", "developer", "user", "assistant", "tool",
                                          "TextPart", "NamedToolChoice") and out:
            continue  # the discriminator's tag
        else:
            out += f".{p}" if out else str(p)
    return out


def validate(kind: str, body: dict) -> Any:
    """The body as OpenAI's request type for `kind`; a 400 naming the first field that breaks
    it."""
    return validate_model(REQUEST_MODELS[kind], body)


def as_request(kind: str, body: BaseModel | dict) -> Any:
    """The typed request the pool forwards: serve's checked model as it is, or a body a router
    wrote itself, checked into the model (a 400 naming the field)."""
    return body if isinstance(body, BaseModel) else validate(kind, body)


def validate_model(model: type[BaseModel], body: dict) -> Any:
    """`body` as `model` (the type /openapi.json documents for the endpoint); a 400 naming the
    first field that breaks it."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise _bad_field(exc, body) from None


def _bad_field(exc: ValidationError, body: dict) -> BadRequest:
    errors = exc.errors(include_url=False)
    # a union reports each branch; the most specific one says most
    err = max(errors, key=lambda e: len(e["loc"]))
    if any(e["type"] == "union_tag_not_found" or e["type"] == "union_tag_invalid"
           for e in errors):
        err = next(e for e in errors if e["type"].startswith("union_tag"))
    param = _param(tuple(err["loc"]))
    typ = err["type"]
    if typ == "missing":
        return BadRequest(f"'{param}' is required", param=param,
                          code="missing_required_parameter")
    if typ == "union_tag_not_found":
        return BadRequest(f"'{param}.role' is required (system, developer, user, assistant or "
                          "tool)", param=f"{param}.role", code="missing_required_parameter")
    if typ == "union_tag_invalid":
        return BadRequest(f"'{param}.role' must be system, developer, user, assistant or tool",
                          param=f"{param}.role")
    if param.endswith(".type") and "content" in param and typ == "literal_error":
        return BadRequest(f"'{param}': only text content parts are accepted by this model "
                          "(no image or audio input)", param=param, code="unsupported_content")
    if typ == "extra_forbidden":
        return BadRequest(f"'{param}' is not a known field here", param=param,
                          code="unknown_parameter")
    msg = err["msg"]
    if typ.endswith("_type") or typ.startswith(("bool", "int", "float", "string", "list",
                                                "dict", "model")):
        code = "invalid_type"
    else:
        code = "invalid_value"
    return BadRequest(f"'{param}': {msg[0].lower()}{msg[1:]}", param=param, code=code)
