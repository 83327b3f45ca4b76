"""Constrained decoding on llama.cpp (seed 000 §2.3: structured extraction breaks on one wrong
token): a constraint, {"json_schema": …} or {"labels": […]}, becomes a GBNF grammar and a
grammar sampler that runs before the token is chosen, as llama-server's `json_schema` and
`grammar` fields do (common/sampling.cpp puts the grammar first)."""

from __future__ import annotations

import json

from edgepick.errors import EdgepickError


def gbnf(constraint: dict) -> str:
    """The GBNF text for a constraint; one line naming what is wrong otherwise."""
    if "labels" in constraint:
        labels = [str(x) for x in constraint["labels"] or []]
        if not labels:
            raise EdgepickError("a label constraint needs at least one label")
        return "root ::= " + " | ".join(json.dumps(x) for x in labels) + "\n"
    if "json_schema" in constraint:
        from llama_cpp.llama_grammar import json_schema_to_gbnf

        try:
            return json_schema_to_gbnf(json.dumps(constraint["json_schema"]))
        except Exception as exc:  # the converter raises what it meets: say which schema
            raise EdgepickError(f"the JSON schema cannot be turned into a grammar ({exc})") \
                from None
    raise EdgepickError(f"unknown constraint {sorted(constraint)}: expected json_schema or labels")


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
