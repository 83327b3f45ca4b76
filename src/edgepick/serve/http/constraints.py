"""Constraints a request hands the engine's grammar engine (`response_format` JSON schemas,
llama-server's `json_schema` and `grammar`, tools' `parameters`), checked before forwarding:
satisfiable, and small enough to compile. The check itself is
edgepick/constraints.py's, shared with evaluate and deploy.yaml; here it is found in a request
body and its refusal becomes a 400 naming the field (docs/serve.md, "Constrained output")."""

from __future__ import annotations

from typing import Any

from edgepick.constraints import ConstraintError, check_grammar, check_schema
from edgepick.serve.errors import BadRequest


def check_constraints(kind: str, body: dict) -> None:
    """Raise BadRequest naming the field when a schema or grammar in `body` is unsatisfiable or
    too large for the engine to compile."""
    schemas: list[tuple[str, Any]] = []
    fmt = body.get("response_format")
    if isinstance(fmt, dict):
        wrapper = fmt.get("json_schema")
        if isinstance(wrapper, dict) and wrapper.get("schema") is not None:
            schemas.append(("response_format.json_schema.schema", wrapper["schema"]))
        if fmt.get("schema") is not None:
            schemas.append(("response_format.schema", fmt["schema"]))
    if body.get("json_schema") is not None:
        schemas.append(("json_schema", body["json_schema"]))
    for i, tool in enumerate(body.get("tools") or ()):
        params = ((tool or {}).get("function") or {}).get("parameters")
        if params is not None:
            schemas.append((f"tools[{i}].function.parameters", params))
    try:
        for field, schema in schemas:
            check_schema(schema, field)
        grammar = body.get("grammar")
        if grammar is not None:
            if not isinstance(grammar, str):
                raise BadRequest("'grammar' must be a GBNF grammar string", param="grammar")
            check_grammar(grammar, "grammar")
    except ConstraintError as exc:
        raise BadRequest(exc.message, param=exc.param, code=exc.code) from None
