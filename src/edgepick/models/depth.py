"""A model's shape with some blocks removed, predicted from its header without writing the file
(the fit stage estimates a pruned candidate before it is built; edgepick.prune writes it)."""

from __future__ import annotations

import re

from edgepick.errors import EdgepickError
from edgepick.models.moe import active_params
from edgepick.records.model import ModelSpec

_BLOCK = re.compile(r"^blk\.(\d+)\.")

# What the rewritten header adds: the edgepick.prune.* keys and a per-layer sliding-window array
# (one byte a layer); a few hundred bytes against files of megabytes.
PROVENANCE_BYTES = 512


def without_blocks(spec: ModelSpec, removed: list[int]) -> ModelSpec:
    """`spec` as edgepick.prune writes it without `removed`: blocks renumbered, per-layer KV heads
    and sliding-window layers kept for the kept blocks, tensor bytes of the removed blocks gone
    from the file size."""
    gone = set(removed)
    if not gone:
        return spec
    bad = sorted(b for b in gone if not 0 <= b < spec.n_layers)
    if bad or len(gone) >= spec.n_layers:
        raise EdgepickError(f"{spec.source}: cannot remove blocks {sorted(gone)} of "
                            f"{spec.n_layers}")
    kept = [b for b in range(spec.n_layers) if b not in gone]
    new_index = {b: i for i, b in enumerate(kept)}
    tensors, dropped = [], 0
    for t in spec.tensors:
        m = _BLOCK.match(t.name)
        if m is None:
            tensors.append(t)
        elif int(m.group(1)) in gone:
            dropped += t.n_bytes
        else:
            name = f"blk.{new_index[int(m.group(1))]}.{t.name[m.end():]}"
            tensors.append(t.model_copy(update={"name": name}))
    counts: dict[str, int] = {}
    for t in tensors:
        counts[t.type] = counts.get(t.type, 0) + 1
    heads = spec.n_kv_heads if len(spec.n_kv_heads) == spec.n_layers else None
    size = spec.file_size_bytes
    return spec.model_copy(update={
        "n_layers": len(kept),
        "n_kv_heads": [heads[b] for b in kept] if heads else spec.n_kv_heads,
        "swa_layers": [new_index[b] for b in spec.swa_layers if b in new_index],
        "tensors": tensors, "quant_types": counts,
        "n_params": sum(t.n_elements for t in tensors),
        "file_size_bytes": None if size is None else size - dropped + PROVENANCE_BYTES,
        "n_active_params": active_params(tensors, spec.n_experts, spec.n_experts_used)
        if spec.n_experts else None,
    })
