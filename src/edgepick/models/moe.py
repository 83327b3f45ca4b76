"""Mixture of experts: the share of each tensor one decoded token reads (seed 003 §3.3: MoE
needs memory for every parameter, but bandwidth only for the active ones).

Routed expert tensors (GGUF `ffn_{gate,up,down,gate_up}_exps`, their biases and scales) hold all
experts of a layer stacked on the last axis; a token's router picks `n_experts_used` of them, so
a decode step reads that share of each. Shared experts (`*_shexp`), the gating tensors
(`ffn_gate_inp`), dense layers and attention are read in full by every token.
"""

from __future__ import annotations

import re

_ROUTED = re.compile(r"\.ffn_[a-z_]*_exps(\.|$)")


def is_routed_expert(name: str) -> bool:
    return bool(_ROUTED.search(name))


def expert_share(name: str, n_experts: int, n_experts_used: int) -> float:
    """Fraction of the tensor `name` one token reads."""
    if n_experts > 0 and n_experts_used > 0 and is_routed_expert(name):
        return min(1.0, n_experts_used / n_experts)
    return 1.0


def active_params(tensors, n_experts: int, n_experts_used: int) -> int:
    """Parameters one decoded token reads: everything but the routed experts it skips.
    `tensors`: objects with `name` and `n_elements` (TensorInfo)."""
    return int(round(sum(t.n_elements * expert_share(t.name, n_experts, n_experts_used)
                         for t in tensors)))
