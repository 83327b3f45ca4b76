"""Constrained decoding on llama.cpp (seed 000 §2.3: structured extraction breaks on one wrong
token): a constraint, {"json_schema": …} or {"labels": […]}, becomes a GBNF grammar and a
grammar sampler that runs before the token is chosen, as llama-server's `json_schema` and
`grammar` fields do (common/sampling.cpp puts the grammar first)."""

from __future__ import annotations

import json

from edgepick.constraints import ConstraintError, check_constraint, check_grammar
from edgepick.errors import EdgepickError


def gbnf(constraint: dict) -> str:
    """The GBNF text for a constraint, after the safety check every grammar passes
    (edgepick/constraints.py); one line naming what is wrong otherwise."""
    try:
        check_constraint(constraint)
        if "labels" in constraint:
            text = "root ::= " + " | ".join(json.dumps(str(x)) for x in constraint["labels"]) \
                + "\n"
        else:
            text = _schema_gbnf(constraint["json_schema"])
        check_grammar(text, "grammar")
    except ConstraintError as exc:
        raise EdgepickError(f"the constraint cannot be a grammar: {exc.message}") from None
    return text


def _schema_gbnf(schema) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        return json_schema_to_gbnf(json.dumps(schema))
    except Exception as exc:  # the converter raises what it meets: say which schema
        raise EdgepickError(f"the JSON schema cannot be turned into a grammar ({exc})") from None


def request_fields(constraint: dict, *, name: str = "answer", strict: bool = True) -> dict:
    """A constraint as an OpenAI-compatible request states it, checked: a JSON schema as
    OpenAI's `response_format` (llama-server builds its grammar; `name` and `strict` are
    OpenAI's), a label set as llama-server's `grammar` (GBNF; other servers ignore the field)."""
    if "json_schema" in constraint:
        try:
            check_constraint(constraint)
        except ConstraintError as exc:
            raise EdgepickError(f"the constraint cannot be a grammar: {exc.message}") from None
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": name, "schema": constraint["json_schema"], "strict": strict}}}
    return {"grammar": gbnf(constraint)}


def grammar_chain(vocab, constraint: dict, then):
    """A sampler chain: the grammar first, then `then` (greedy, or the sampling chain's draw).
    Free with llama_sampler_free."""
    import llama_cpp

    grammar = llama_cpp.llama_sampler_init_grammar(vocab, gbnf(constraint).encode(), b"root")
    if not grammar:
        raise EdgepickError("llama.cpp refused the grammar made from this constraint")
    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    llama_cpp.llama_sampler_chain_add(chain, grammar)
    llama_cpp.llama_sampler_chain_add(chain, then)
    return chain
